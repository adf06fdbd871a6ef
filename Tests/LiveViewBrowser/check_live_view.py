#!/usr/bin/python3
"""The live view in a real browser: headless Chromium, driven by Selenium, against a running `blemu ui`.

    /usr/bin/python3 Tests/LiveViewBrowser/check_live_view.py --url 'http://127.0.0.1:8080/?token=T' \
        --ctl '.build/debug/blemu-cli ctl /tmp/lv.sock' --screenshot /tmp/live-view.png \
        --wrong-token-url 'http://127.0.0.1:8080/?token=wrong'

Needs Debian's python3-selenium, chromium and chromium-driver. The device is steered and read with `blemu ctl`
(--ctl), so every check compares the page with the control socket's own answer:

1. the page renders the profile (name, state, battery-level's percent as `ctl get` says, the advertisement's UUIDs);
2. a value set with `ctl set` shows on the page within 1 s;
3. the page's set form changes the device's value, and its answer shows as ok;
4. the page's notify button records a notification (timeline within 1 s) and `notificationsQueued` grows;
5. a wrong token gets a 403 and no page (with --wrong-token-url);
6. a page of another origin cannot open the view's WebSocket, even in a browser holding the view's cookie;
7. a screenshot of the view after the checks.

Exit status 0 when all pass, 1 with the failing check's reason otherwise.
"""
import argparse
import http.server
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

BATTERY = "battery-level"
FIELD = "percent"


class CheckFailed(Exception):
    pass


# ---------------------------------------------------------------- the device, through `blemu ctl`

class Control:
    def __init__(self, command):
        self.command = shlex.split(command)

    def __call__(self, *arguments, expect_ok=True):
        try:
            run = subprocess.run(self.command + list(arguments), capture_output=True, text=True, timeout=15)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise CheckFailed("cannot run %s: %s" % (shlex.join(self.command + list(arguments)), error))
        try:
            answer = json.loads(run.stdout)
        except ValueError:
            raise CheckFailed("`%s` printed no JSON (exit %d): %s %s" % (
                shlex.join(self.command + list(arguments)), run.returncode, run.stdout.strip(), run.stderr.strip()))
        if expect_ok and answer.get("ok") is not True:
            raise CheckFailed("`ctl %s` failed: %s" % (" ".join(arguments), answer.get("error", answer)))
        return answer

    def percent(self):
        return self("get", BATTERY).get("fields", {}).get(FIELD)

    def counter(self, name):
        return self("counters")["counters"][name]


# ---------------------------------------------------------------- the browser

def browser(window="1400,1000", chromedriver="/usr/bin/chromedriver"):
    options = webdriver.ChromeOptions()
    options.add_argument("--headless=new")
    options.add_argument("--window-size=" + window)
    options.add_argument("--disable-dev-shm-usage")
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def wait_for(what, probe, timeout, interval=0.02):
    """Polls `probe` until it returns something true; returns (that, seconds taken) or fails saying `what`."""
    start = time.monotonic()
    while True:
        value = probe()
        elapsed = time.monotonic() - start
        if value:
            return value, elapsed
        if elapsed > timeout:
            raise CheckFailed("%s within %.1f s" % (what, timeout))
        time.sleep(interval)


def text_of(driver, selector):
    return driver.execute_script(
        "const node = document.querySelector(arguments[0]); return node ? node.textContent.trim() : null;", selector)


def row(characteristic):
    return '.characteristic[data-characteristic="%s"]' % characteristic


def field_selector(characteristic, field):
    return '%s .field[data-field="%s"]' % (row(characteristic), field)


def connected(driver):
    return driver.execute_script("return document.body && document.body.dataset.connected === 'true';")


# ---------------------------------------------------------------- a page of another origin

FOREIGN_PAGE = """<!doctype html><meta charset="utf-8"><title>not the view</title>
<p>A page of another origin that tries the view's WebSocket.</p>
<script>
window.probe = {opened: false, errored: false, closed: false, code: null, messages: 0};
const socket = new WebSocket(%s);
socket.onopen = () => {
  window.probe.opened = true;
  socket.send(JSON.stringify({type: "command", seq: 1,
    request: {command: "set", id: "battery-level", fields: {percent: 99}}}));
};
socket.onmessage = () => { window.probe.messages += 1; };
socket.onerror = () => { window.probe.errored = true; };
socket.onclose = (event) => { window.probe.closed = true; window.probe.code = event.code; };
</script>
"""


def foreign_server(view):
    """Serves FOREIGN_PAGE on the view's loopback host, on a port of its own: same site, another origin."""
    host = view.hostname or "127.0.0.1"
    scheme = "wss://" if view.scheme == "https" else "ws://"
    page = (FOREIGN_PAGE % json.dumps(scheme + view.netloc + "/ws")).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *arguments):
            pass

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    server = Server((host, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bracketed = "[%s]" % host if ":" in host else host
    return server, "http://%s:%d/" % (bracketed, server.server_address[1])


# ---------------------------------------------------------------- the checks

def check_renders(driver, ctl, url, bluez=None):
    start = time.monotonic()
    try:
        driver.get(url)
    except WebDriverException as error:
        raise CheckFailed("cannot load %s: %s" % (url, (error.msg or "").strip()))
    try:
        _, seconds = wait_for("", lambda: connected(driver), 10)
    except CheckFailed:
        body = driver.execute_script("return document.body ? document.body.innerText : '';")[:160]
        raise CheckFailed("the page rendered no snapshot (body[data-connected=true]) within 10 s; it says: %r" % body)
    profile = ctl("describe")["profile"]
    name = text_of(driver, "#device-name")
    if name != profile["name"]:
        raise CheckFailed("#device-name says %r, the profile's name is %r" % (name, profile["name"]))
    state = text_of(driver, "#device-state")
    if state != "poweredOn":
        raise CheckFailed("#device-state says %r, not poweredOn (ctl status: %s)" % (state, ctl("status").get("state")))
    if bluez is not None and text_of(driver, "#bluez") != bluez:
        raise CheckFailed("#bluez says %r, the lab booted BlueZ %s" % (text_of(driver, "#bluez"), bluez))
    expected = ctl.percent()
    if expected is None:
        raise CheckFailed("`ctl get %s` has no field %s: is this the heart-rate or battery profile?" % (BATTERY, FIELD))
    try:
        wait_for("", lambda: text_of(driver, field_selector(BATTERY, FIELD)) == str(expected), 2)
    except CheckFailed:
        raise CheckFailed("%s's %s shows %r on the page, `ctl get` says %r" % (
            BATTERY, FIELD, text_of(driver, field_selector(BATTERY, FIELD)), expected))
    types = driver.execute_script(
        "return Array.from(document.querySelectorAll('#adv-structures tr[data-type]'), (r) => r.dataset.type);")
    if not ({"02", "03"} & set(types)):
        raise CheckFailed("#adv-structures has no 16-bit service UUID list (type 02 or 03); its types: %s" % types)
    cookie = None
    if "token" in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query):
        # `blemu-ui`, or `blemu-ui-PORT`: one per port, as a browser shares a host's cookies across its ports.
        names = [c["name"] for c in driver.get_cookies()]
        cookie = next((c for c in driver.get_cookies() if c["name"] == "blemu-ui" or c["name"].startswith("blemu-ui-")), None)
        if not cookie:
            raise CheckFailed("the view was opened with ?token= but set no blemu-ui cookie (cookies: %s)" % names)
        if not cookie.get("httpOnly"):
            raise CheckFailed("the blemu-ui cookie is not HttpOnly")
        # Kept in the cookie from then on: the address bar (and so the history and a bookmark) drops it.
        if "token=" in driver.current_url:
            raise CheckFailed("the address bar still shows the token: %s" % driver.current_url)
    print("1. page renders the profile: ok (first snapshot %.2f s after loading, %.2f s in all; %r, poweredOn, "
          "%s %s = %s, AD types %s%s)" % (seconds, time.monotonic() - start, name, BATTERY, FIELD, expected,
                                           ",".join(types), "; cookie %s, HttpOnly" % cookie["name"] if cookie else ""))


def check_ctl_set_shows(driver, ctl):
    if ctl.percent() == 42:  # a change the page has to show, not a value it already had
        ctl("set", BATTERY, "--field", FIELD + "=41")
        wait_for("the page did not show 41", lambda: text_of(driver, field_selector(BATTERY, FIELD)) == "41", 3)
    before = time.monotonic()
    ctl("set", BATTERY, "--field", FIELD + "=42")
    after = time.monotonic()
    try:
        _, seconds = wait_for("", lambda: text_of(driver, field_selector(BATTERY, FIELD)) == "42", 1.0, 0.01)
    except CheckFailed:
        raise CheckFailed("`ctl set %s --field %s=42` did not show on the page within 1 s (it shows %r)" % (
            BATTERY, FIELD, text_of(driver, field_selector(BATTERY, FIELD))))
    print("2. ctl set shows on the page: ok (%.0f ms after `ctl set` returned; the command took %.0f ms)" % (
        seconds * 1000, (after - before) * 1000))


def check_page_set(driver, ctl):
    answers = driver.execute_script("return document.querySelectorAll('#answers .answer').length;")
    form = driver.find_element(By.CSS_SELECTOR, row(BATTERY) + " form.set-form")
    field = form.find_element(By.CSS_SELECTOR, 'input[name="field:%s"]' % FIELD)
    field.clear()
    field.send_keys("33")
    start = time.monotonic()
    form.find_element(By.CSS_SELECTOR, "button.set-button").click()
    try:
        _, seconds = wait_for("", lambda: ctl.percent() == 33, 3, 0.05)
    except CheckFailed:
        raise CheckFailed("the page's set form sent %s=33 but `ctl get %s` says %r" % (FIELD, BATTERY, ctl.percent()))

    def newest_answer():
        return driver.execute_script("""
            const all = document.querySelectorAll('#answers .answer');
            if (all.length <= arguments[0]) return null;
            return {ok: all[0].classList.contains('ok'), text: all[0].textContent};""", answers)
    answer, _ = wait_for("no answer appeared in #answers after the page's set", newest_answer, 3)
    if not answer["ok"] or "set" not in answer["text"]:
        raise CheckFailed("the newest #answers entry is not an ok answer to set: %r" % answer["text"])
    wait_for("the page does not show its own set value 33",
             lambda: text_of(driver, field_selector(BATTERY, FIELD)) == "33", 2)
    print("3. page's set form sets the value: ok (`ctl get` said 33 %.0f ms after the click; answer %r)" % (
        seconds * 1000, answer["text"].strip()))


def check_notify_button(driver, ctl):
    selector = '#events .event[data-type="notification"][data-characteristic="%s"]' % BATTERY
    # The set of check 3 notified too: let its event arrive first, then count only rows that come after the click.
    value = ctl("get", BATTERY)["hex"]
    try:
        wait_for("", lambda: driver.execute_script("""
            return Array.from(document.querySelectorAll(arguments[0])).some((e) => {
              const detail = e.querySelector('.detail');
              return detail !== null && detail.textContent.startsWith(arguments[1] + ' ');
            });""", selector, " ".join(value[i:i + 2] for i in range(0, len(value), 2))), 2)
    except CheckFailed:
        pass
    driver.execute_script("document.querySelectorAll(arguments[0]).forEach((e) => e.dataset.seen = '1');", selector)
    queued = ctl.counter("notificationsQueued")
    button = driver.find_element(By.CSS_SELECTOR, row(BATTERY) + " .notify-button")
    start = time.monotonic()
    button.click()
    try:
        _, seconds = wait_for("", lambda: driver.execute_script(
            "return document.querySelector(arguments[0] + ':not([data-seen])') !== null;", selector), 1.0, 0.01)
    except CheckFailed:
        raise CheckFailed("no notification event for %s appeared in the timeline within 1 s of the notify button" % BATTERY)
    after, _ = wait_for("", lambda: ctl.counter("notificationsQueued"), 1)
    if after <= queued:
        raise CheckFailed("`ctl counters` notificationsQueued stayed at %d after the notify button" % queued)
    print("4. notify button: ok (notification in the timeline %.0f ms after the click; notificationsQueued %d -> %d)" % (
        seconds * 1000, queued, after))


def check_wrong_token(url, wrong_url, chromedriver):
    outcomes = []
    missing = urllib.parse.urlsplit(url)._replace(query="").geturl()
    for label, address in (("a wrong token", wrong_url), ("no token", missing)):
        try:
            with urllib.request.urlopen(address, timeout=5) as reply:
                raise CheckFailed("%s (%s) got HTTP %d, not 403" % (label, address, reply.status))
        except urllib.error.HTTPError as error:
            body = error.read().decode("utf-8", "replace")
            if error.code != 403 or not body.startswith("blemu ui: wrong or missing token"):
                raise CheckFailed("%s got HTTP %d %r, not 403 'blemu ui: wrong or missing token'" % (
                    label, error.code, body[:80]))
            outcomes.append(label)
    # A browser of its own, which never held the view's cookie.
    driver = browser(chromedriver=chromedriver)
    try:
        driver.get(wrong_url)
        time.sleep(1.0)
        body = driver.execute_script("return document.body ? document.body.innerText : '';")
        if "wrong or missing token" not in body:
            raise CheckFailed("the wrong-token page does not say 'wrong or missing token': %r" % body[:120])
        if driver.execute_script("return document.querySelector('body[data-connected]') !== null;"):
            raise CheckFailed("the wrong-token page rendered the view (body[data-connected])")
    finally:
        driver.quit()
    print("5. wrong token refused: ok (403 'wrong or missing token' for %s; the browser shows it, no view)" %
          " and ".join(outcomes))


def check_foreign_origin(driver, ctl, url):
    view = urllib.parse.urlsplit(url)
    server, address = foreign_server(view)
    own = driver.current_window_handle
    try:
        driver.switch_to.new_window("tab")
        driver.get(address)
        time.sleep(2.0)
        probe = driver.execute_script("return window.probe;")
        driver.close()
    finally:
        driver.switch_to.window(own)
        server.shutdown()
    if probe is None:
        raise CheckFailed("the foreign page at %s did not run its script" % address)
    if probe["opened"] or probe["messages"]:
        raise CheckFailed("a page of origin %s opened the view's WebSocket (%s)" % (address.rstrip("/"), probe))
    if not (probe["closed"] or probe["errored"]):
        raise CheckFailed("the foreign WebSocket neither failed nor closed within 2 s (%s)" % probe)
    percent = ctl.percent()
    if percent == 99:
        raise CheckFailed("a page of another origin set %s to 99" % BATTERY)
    print("6. foreign origin refused: ok (%s never opened ws://%s/ws: error %s, close code %s; %s stays %s)" % (
        address.rstrip("/"), view.netloc, probe["errored"], probe["code"], FIELD, percent))


def check_screenshot(driver, path, url):
    if not connected(driver):
        driver.get(url)
        wait_for("the view did not come back for the screenshot", lambda: connected(driver), 10)
    time.sleep(1.0)  # a few more events and a plot redraw
    origin = "%s://%s/" % urllib.parse.urlsplit(url)[:2]
    # Exceptions and console.error of the page's own scripts (a refused connection is the network's, not theirs).
    errors = [entry["message"] for entry in driver.get_log("browser")
              if entry["level"] == "SEVERE" and entry.get("source") in ("javascript", "console-api")
              and entry["message"].startswith(origin)]
    if errors:
        raise CheckFailed("the page logged JavaScript errors: %s" % errors)
    rows = driver.execute_script("return document.querySelectorAll('#events .event').length;")
    if not driver.save_screenshot(path):
        raise CheckFailed("could not save the screenshot to %s" % path)
    print("7. screenshot: ok (%s, %d timeline rows, no JavaScript error)" % (path, rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the view, with ?token=T when it has one")
    parser.add_argument("--ctl", required=True, help="how to run `blemu ctl SOCK`, e.g. 'blemu ctl /tmp/x.sock'")
    parser.add_argument("--screenshot", required=True, help="where to save the PNG")
    parser.add_argument("--wrong-token-url", help="the same view with a wrong token (check 5)")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--expect-bluez", help="the BlueZ version #bluez must show (the lab's)")
    args = parser.parse_args()

    ctl = Control(args.ctl)
    driver = None
    paused = False
    step = "setup"
    try:
        # A running schedule of battery-level would overwrite the values the checks set; hold it while they run.
        schedules = ctl("schedules")["schedules"]
        if any(s["id"] == BATTERY and not s["paused"] for s in schedules):
            ctl("schedules", "pause", BATTERY)
            paused = True
        driver = browser(chromedriver=args.chromedriver)
        step = "1"
        check_renders(driver, ctl, args.url, args.expect_bluez)
        step = "2"
        check_ctl_set_shows(driver, ctl)
        step = "3"
        check_page_set(driver, ctl)
        step = "4"
        check_notify_button(driver, ctl)
        step = "5"
        if args.wrong_token_url:
            check_wrong_token(args.url, args.wrong_token_url, args.chromedriver)
        else:
            print("5. wrong token: skipped (no --wrong-token-url)")
        step = "6"
        check_foreign_origin(driver, ctl, args.url)
        step = "7"
        check_screenshot(driver, args.screenshot, args.url)
    except (CheckFailed, WebDriverException) as error:
        message = error.msg if isinstance(error, WebDriverException) else str(error)
        print("live view: check %s failed: %s" % (step, (message or repr(error)).strip()))
        if driver is not None:
            try:
                driver.save_screenshot(args.screenshot)
                print("live view: the page at the failure is in %s" % args.screenshot)
            except WebDriverException:
                pass
        return 1
    finally:
        if driver is not None:
            driver.quit()
        if paused:
            try:
                ctl("schedules", "resume", BATTERY)
            except CheckFailed as error:
                print("live view: could not resume the %s schedule: %s" % (BATTERY, error))
    print("live view: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
