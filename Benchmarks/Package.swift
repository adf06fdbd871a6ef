// swift-tools-version: 6.2
// Benchmarks live in their own package so the main build stays lean; it uses the root package by path.
import PackageDescription

let package = Package(
    name: "blemu-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "blemu", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "dbus-bench",
            dependencies: [.product(name: "DBus", package: "blemu"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.treatAllWarnings(as: .error), .enableUpcomingFeature("ExistentialAny")])
    ]
)
