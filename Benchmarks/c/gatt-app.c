// The GATT benchmark's limit: the smallest libdbus GATT application that publishes the benchmark's characteristics
// (the UUIDs of Benchmarks/profiles/bench.yaml) and answers bluetoothd's calls from static buffers, single-threaded, with
// dbus_connection_read_write_dispatch. It registers the application and an advertisement on /org/bluez/hci0 of
// the system bus ($DBUS_SYSTEM_BUS_ADDRESS), answers GetManagedObjects, ReadValue, WriteValue (no reply when the
// call is flagged no-reply), StartNotify/StopNotify (PropertiesChanged) and AcquireNotify (a SEQPACKET socket).
// Control point: a write of u32 LE N sends N notifications; a read returns the writes without response received.
// Usage: gatt-app [--extra N]     N more read characteristics in a second service (registration scaling)
//        gatt-app --no-acquire    no NotifyAcquired, so a real bluetoothd notifies through StartNotify and
//                                 PropertiesChanged (Benchmarks/run-lab measures both paths)
#include <dbus/dbus.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ROOT "/bench"
#define UUID_TAIL "-be4c-4f2a-9c1e-6d0a5e7b0c00"
enum { RW20, RW512, WNR, NOTIFY, CONTROL, BASE };

static const char *base_flags[BASE][3] = {
    {"read", "write", NULL}, {"read", "write", NULL}, {"read", "write-without-response", NULL},
    {"read", "notify", NULL}, {"read", "write", NULL}};
static unsigned char values[BASE][512];
static int lengths[BASE] = {20, 512, 20, 20, 4};
static unsigned char extra_value[20];
static int extra = 0;
static uint32_t writes_without_response = 0;
static int notifying = 0;
static int notify_fd = -1;
static int offer_acquire = 1;

static void append_variant(DBusMessageIter *iter, int type, const char *signature, const void *value) {
    DBusMessageIter variant;
    dbus_message_iter_open_container(iter, DBUS_TYPE_VARIANT, signature, &variant);
    dbus_message_iter_append_basic(&variant, type, value);
    dbus_message_iter_close_container(iter, &variant);
}

static void entry_basic(DBusMessageIter *dict, const char *key, int type, const char *signature, const void *value) {
    DBusMessageIter entry;
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    append_variant(&entry, type, signature, value);
    dbus_message_iter_close_container(dict, &entry);
}

static void entry_strings(DBusMessageIter *dict, const char *key, const char **strings) {
    DBusMessageIter entry, variant, array;
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "as", &variant);
    dbus_message_iter_open_container(&variant, DBUS_TYPE_ARRAY, "s", &array);
    for (; *strings; strings++) dbus_message_iter_append_basic(&array, DBUS_TYPE_STRING, strings);
    dbus_message_iter_close_container(&variant, &array);
    dbus_message_iter_close_container(&entry, &variant);
    dbus_message_iter_close_container(dict, &entry);
}

static void append_bytes(DBusMessageIter *iter, const unsigned char *bytes, int count) {
    DBusMessageIter array;
    dbus_message_iter_open_container(iter, DBUS_TYPE_ARRAY, "y", &array);
    dbus_message_iter_append_fixed_array(&array, DBUS_TYPE_BYTE, &bytes, count);
    dbus_message_iter_close_container(iter, &array);
}

// Parses /bench/serviceS[/charC]; returns the depth (1 service, 2 characteristic, 0 other).
static int parse_path(const char *path, int *service, int *chr) {
    if (sscanf(path, ROOT "/service%d/char%d", service, chr) == 2) return 2;
    if (sscanf(path, ROOT "/service%d", service) == 1) return 1;
    return 0;
}

static void service_properties(DBusMessageIter *dict, int service) {
    char uuid[64], *p = uuid;
    snprintf(uuid, sizeof uuid, "%s" UUID_TAIL, service == 0 ? "b1e70000" : "b1e71000");
    dbus_bool_t primary = TRUE;
    entry_basic(dict, "UUID", DBUS_TYPE_STRING, "s", &p);
    entry_basic(dict, "Primary", DBUS_TYPE_BOOLEAN, "b", &primary);
}

static void characteristic_properties(DBusMessageIter *dict, int service, int chr) {
    char uuid[64], path[64], *u = uuid, *s = path;
    static const char *read_only[] = {"read", NULL};
    if (service == 0)
        snprintf(uuid, sizeof uuid, "b1e7000%d" UUID_TAIL, chr + 1);
    else
        snprintf(uuid, sizeof uuid, "b1e8%04x" UUID_TAIL, chr);
    snprintf(path, sizeof path, ROOT "/service%d", service);
    entry_basic(dict, "UUID", DBUS_TYPE_STRING, "s", &u);
    entry_basic(dict, "Service", DBUS_TYPE_OBJECT_PATH, "o", &s);
    entry_strings(dict, "Flags", service == 0 ? base_flags[chr] : read_only);
    if (service == 0 && chr == NOTIFY && offer_acquire) {
        dbus_bool_t acquired = notify_fd >= 0;
        entry_basic(dict, "NotifyAcquired", DBUS_TYPE_BOOLEAN, "b", &acquired);
    }
}

static void advertisement_properties(DBusMessageIter *dict) {
    const char *type = "peripheral", *name = "bench";
    static const char *uuids[] = {"b1e70000" UUID_TAIL, NULL};
    entry_basic(dict, "Type", DBUS_TYPE_STRING, "s", &type);
    entry_strings(dict, "ServiceUUIDs", uuids);
    entry_basic(dict, "LocalName", DBUS_TYPE_STRING, "s", &name);
}

static void object(DBusMessageIter *objects, const char *path, const char *interface, int service, int chr) {
    DBusMessageIter entry, interfaces, ientry, dict;
    dbus_message_iter_open_container(objects, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_OBJECT_PATH, &path);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_ARRAY, "{sa{sv}}", &interfaces);
    dbus_message_iter_open_container(&interfaces, DBUS_TYPE_DICT_ENTRY, NULL, &ientry);
    dbus_message_iter_append_basic(&ientry, DBUS_TYPE_STRING, &interface);
    dbus_message_iter_open_container(&ientry, DBUS_TYPE_ARRAY, "{sv}", &dict);
    if (chr < 0) service_properties(&dict, service); else characteristic_properties(&dict, service, chr);
    dbus_message_iter_close_container(&ientry, &dict);
    dbus_message_iter_close_container(&interfaces, &ientry);
    dbus_message_iter_close_container(&entry, &interfaces);
    dbus_message_iter_close_container(objects, &entry);
}

static DBusMessage *managed_objects(DBusMessage *call) {
    DBusMessage *reply = dbus_message_new_method_return(call);
    DBusMessageIter iter, objects;
    char path[64];
    dbus_message_iter_init_append(reply, &iter);
    dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{oa{sa{sv}}}", &objects);
    for (int service = 0; service < (extra > 0 ? 2 : 1); service++) {
        snprintf(path, sizeof path, ROOT "/service%d", service);
        object(&objects, path, "org.bluez.GattService1", service, -1);
        for (int chr = 0; chr < (service == 0 ? BASE : extra); chr++) {
            snprintf(path, sizeof path, ROOT "/service%d/char%d", service, chr);
            object(&objects, path, "org.bluez.GattCharacteristic1", service, chr);
        }
    }
    dbus_message_iter_close_container(&iter, &objects);
    return reply;
}

static void notify_burst(DBusConnection *connection, int count) {
    unsigned char value[20];
    for (int i = 0; i < count; i++) {
        memset(value, i & 0xff, sizeof value);
        memcpy(value, &i, 4);
        if (notify_fd >= 0) {
            // Blocking send: the socket's buffer is the back-pressure, so nothing is lost.
            if (send(notify_fd, value, sizeof value, MSG_NOSIGNAL) < 0) {
                close(notify_fd);
                notify_fd = -1;
                return;
            }
        } else if (notifying) {
            DBusMessage *signal = dbus_message_new_signal(
                ROOT "/service0/char3", "org.freedesktop.DBus.Properties", "PropertiesChanged");
            DBusMessageIter iter, dict, entry, variant, empty;
            const char *interface = "org.bluez.GattCharacteristic1", *key = "Value";
            dbus_message_iter_init_append(signal, &iter);
            dbus_message_iter_append_basic(&iter, DBUS_TYPE_STRING, &interface);
            dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &dict);
            dbus_message_iter_open_container(&dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
            dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
            dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "ay", &variant);
            append_bytes(&variant, value, sizeof value);
            dbus_message_iter_close_container(&entry, &variant);
            dbus_message_iter_close_container(&dict, &entry);
            dbus_message_iter_close_container(&iter, &dict);
            dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "s", &empty);
            dbus_message_iter_close_container(&iter, &empty);
            dbus_connection_send(connection, signal, NULL);
            dbus_message_unref(signal);
            // libdbus queues without bound: flushing now and then is the back-pressure.
            if ((i & 255) == 255) dbus_connection_flush(connection);
        }
    }
}

static DBusHandlerResult handle(DBusConnection *connection, DBusMessage *call, void *data) {
    (void)data;
    const char *path = dbus_message_get_path(call), *interface = dbus_message_get_interface(call);
    const char *member = dbus_message_get_member(call);
    if (dbus_message_get_type(call) != DBUS_MESSAGE_TYPE_METHOD_CALL || !path || !member)
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    int service = -1, chr = -1, depth = parse_path(path, &service, &chr);
    DBusMessage *reply = NULL;
    int burst = 0;
    if (!strcmp(member, "GetManagedObjects") && !strcmp(path, ROOT)) {
        reply = managed_objects(call);
    } else if (!strcmp(member, "GetAll") || !strcmp(member, "Get")) {
        reply = dbus_message_new_method_return(call);
        DBusMessageIter iter, dict;
        dbus_message_iter_init_append(reply, &iter);
        dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &dict);
        if (!strcmp(path, ROOT "/advertisement")) advertisement_properties(&dict);
        else if (depth == 1) service_properties(&dict, service);
        else if (depth == 2) characteristic_properties(&dict, service, chr);
        dbus_message_iter_close_container(&iter, &dict);
    } else if (!strcmp(member, "Release")) {
        reply = dbus_message_new_method_return(call);
    } else if (depth == 2 && interface && !strcmp(interface, "org.bluez.GattCharacteristic1")) {
        unsigned char *value = service == 0 ? values[chr] : extra_value;
        int length = service == 0 ? lengths[chr] : 20;
        if (!strcmp(member, "ReadValue")) {
            if (service == 0 && chr == CONTROL) memcpy(values[CONTROL], &writes_without_response, 4);
            reply = dbus_message_new_method_return(call);
            DBusMessageIter iter;
            dbus_message_iter_init_append(reply, &iter);
            append_bytes(&iter, value, length);
        } else if (!strcmp(member, "WriteValue")) {
            DBusMessageIter iter, array;
            const unsigned char *bytes = NULL;
            int count = 0;
            if (dbus_message_iter_init(call, &iter) && dbus_message_iter_get_arg_type(&iter) == DBUS_TYPE_ARRAY) {
                dbus_message_iter_recurse(&iter, &array);
                dbus_message_iter_get_fixed_array(&array, &bytes, &count);
            }
            if (service == 0 && chr == WNR) writes_without_response++;
            if (service == 0 && chr == CONTROL && count >= 4) memcpy(&burst, bytes, 4);
            else if (service == 0 && count <= 512) { memcpy(value, bytes, count); lengths[chr] = count; }
            if (!dbus_message_get_no_reply(call)) reply = dbus_message_new_method_return(call);
        } else if (!strcmp(member, "StartNotify") || !strcmp(member, "StopNotify")) {
            notifying = member[2] == 'a';
            reply = dbus_message_new_method_return(call);
        } else if (!strcmp(member, "AcquireNotify")) {
            int pair[2];
            if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
                reply = dbus_message_new_error(call, "org.bluez.Error.Failed", strerror(errno));
            } else {
                if (notify_fd >= 0) close(notify_fd);
                notify_fd = pair[0];
                dbus_uint16_t mtu = 517;
                reply = dbus_message_new_method_return(call);
                dbus_message_append_args(reply, DBUS_TYPE_UNIX_FD, &pair[1], DBUS_TYPE_UINT16, &mtu, DBUS_TYPE_INVALID);
                close(pair[1]);
            }
        }
    }
    if (!reply) {
        if (dbus_message_get_no_reply(call)) return DBUS_HANDLER_RESULT_HANDLED;
        reply = dbus_message_new_error(call, "org.freedesktop.DBus.Error.UnknownMethod", member);
    }
    dbus_connection_send(connection, reply, NULL);
    dbus_message_unref(reply);
    if (burst > 0) notify_burst(connection, burst);
    return DBUS_HANDLER_RESULT_HANDLED;
}

static void registered(DBusPendingCall *pending, void *data) {
    DBusMessage *reply = dbus_pending_call_steal_reply(pending);
    if (dbus_message_get_type(reply) == DBUS_MESSAGE_TYPE_ERROR) {
        fprintf(stderr, "gatt-app: %s failed: %s\n", (const char *)data, dbus_message_get_error_name(reply));
        exit(69);
    }
    fprintf(stderr, "gatt-app: %s done\n", (const char *)data);
    dbus_message_unref(reply);
    dbus_pending_call_unref(pending);
}

static void call_async(DBusConnection *connection, const char *interface, const char *member, const char *object) {
    DBusMessage *call = dbus_message_new_method_call("org.bluez", "/org/bluez/hci0", interface, member);
    DBusMessageIter iter, dict;
    dbus_message_iter_init_append(call, &iter);
    dbus_message_iter_append_basic(&iter, DBUS_TYPE_OBJECT_PATH, &object);
    dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &dict);
    dbus_message_iter_close_container(&iter, &dict);
    DBusPendingCall *pending = NULL;
    dbus_connection_send_with_reply(connection, call, &pending, 30000);
    dbus_pending_call_set_notify(pending, registered, (void *)member, NULL);
    dbus_message_unref(call);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--extra")) extra = atoi(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "--no-acquire")) offer_acquire = 0;
    for (int i = 0; i < BASE; i++) memset(values[i], i, sizeof values[i]);
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error);
    if (!connection) {
        fprintf(stderr, "gatt-app: %s\n", error.message);
        return 69;
    }
    static const DBusObjectPathVTable vtable = {.message_function = handle};
    dbus_connection_register_fallback(connection, ROOT, &vtable, NULL);
    call_async(connection, "org.bluez.GattManager1", "RegisterApplication", ROOT);
    call_async(connection, "org.bluez.LEAdvertisingManager1", "RegisterAdvertisement", ROOT "/advertisement");
    while (dbus_connection_read_write_dispatch(connection, -1)) {
    }
    return 0;
}
