/// The page's static files, embedded in the binary at build time: no build step, no CDN, nothing to install beside
/// blemu-cli (a lab VM or a machine with no internet serves the same page).
enum PageFiles {
    /// The body and content type for a request path, or nil when there is no such file.
    static func file(at path: String) -> (body: [UInt8], contentType: String)? {
        switch path {
        case "/", "/index.html": (PackageResources.index_html, "text/html; charset=utf-8")
        case "/app.js": (PackageResources.app_js, "text/javascript; charset=utf-8")
        case "/plot.js": (PackageResources.plot_js, "text/javascript; charset=utf-8")
        case "/style.css": (PackageResources.style_css, "text/css; charset=utf-8")
        default: nil
        }
    }
}
