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
            swiftSettings: [.treatAllWarnings(as: .error), .enableUpcomingFeature("ExistentialAny")]),
        // The GATT benchmark (run-gatt): a fake bluetoothd driving every contender; see README.md, "Benchmarks".
        .executableTarget(
            name: "gatt-bench",
            dependencies: [
                .product(name: "DBus", package: "blemu"), .product(name: "LocalIO", package: "blemu"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error), .enableUpcomingFeature("ExistentialAny")]),
        // The "blemu library" contender: BlueZBackend + PeripheralManager used directly.
        .executableTarget(
            name: "gatt-blemu-lib",
            dependencies: [
                .product(name: "BlueZ", package: "blemu"), .product(name: "Peripheral", package: "blemu"),
                .product(name: "GATTModel", package: "blemu"), .product(name: "GATTProfile", package: "blemu"),
                .product(name: "DBus", package: "blemu"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error), .enableUpcomingFeature("ExistentialAny")]),
    ]
)
