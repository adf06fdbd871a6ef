// swift-tools-version: 6.2
// The module graph is the architecture (docs/architecture.md): each arrow below is a dependency the compiler enforces.
import PackageDescription

/// Every Swift target builds in Swift 6 language mode with all warnings treated as errors.
let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("ExistentialAny"),
]

/// What the examples use: the public library surface only.
let exampleDependencies: [Target.Dependency] = [
    "BlueZ", "Peripheral", "GATTModel", .product(name: "Logging", package: "swift-log"),
]

let package = Package(
    name: "blemu",
    platforms: [.macOS(.v15)],
    products: [
        // What people type: serves `blemu run` itself, hands every other command to blemu-cli.
        .executable(name: "blemu", targets: ["blemu"]),
        .executable(name: "blemu-cli", targets: ["BlemuCLI"]),
        .library(name: "GATTModel", targets: ["GATTModel"]),
        .library(name: "BlueZModel", targets: ["BlueZModel"]),
        .library(name: "GATTProfile", targets: ["GATTProfile"]),
        .library(name: "LocalIO", targets: ["LocalIO"]),
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "Peripheral", targets: ["Peripheral"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .library(name: "ControlProtocol", targets: ["ControlProtocol"]),
        .library(name: "Emulation", targets: ["Emulation"]),
        .library(name: "PeripheralTesting", targets: ["PeripheralTesting"]),
        .library(name: "BlueZTesting", targets: ["BlueZTesting"]),
        .library(name: "Lab", targets: ["Lab"]),
        .library(name: "ProbeCentral", targets: ["ProbeCentral"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // C libraries, each behind a one-line shim and imported by exactly one Swift module.
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),

        // The one way to wait for a condition: a change signal, a deadline on an injected clock.
        .target(name: "Waiting", swiftSettings: strict),
        // Plain Bluetooth values: UUIDs, services, characteristics, descriptors, ATT errors, advertisement data.
        .target(name: "GATTModel", swiftSettings: strict),
        // Files, children and threads with POSIX calls, so nothing on the serving path links Foundation and nothing
        // else links swift-corelibs-foundation's ICU data.
        .target(name: "LocalIO", swiftSettings: strict),
        // What bluetoothd is, as blemu knows it: its names (one table for both sides of its API), flag strings,
        // which ATT errors it carries, and the advertisement it puts on air.
        .target(name: "BlueZModel", dependencies: ["GATTModel"], swiftSettings: strict),
        // The profile: a whole device (PeripheralProfile) with its behaviour language, and its YAML.
        .target(
            name: "GATTProfile", dependencies: ["GATTModel", "BlueZModel", "LocalIO", "CYAML"], swiftSettings: strict),
        .target(
            name: "DBus",
            dependencies: ["CDBus", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(
            name: "Peripheral",
            dependencies: ["GATTModel", "Waiting", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // What both sides of bluetoothd's API export to it: the pairing agent, and the check that only bluetoothd
        // calls them.
        .target(
            name: "BlueZAgent",
            dependencies: ["DBus", "GATTModel", "BlueZModel", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(
            name: "BlueZ",
            dependencies: [
                "Peripheral", "BlueZAgent", "DBus", "GATTModel", "BlueZModel", "LocalIO",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The control socket's wire protocol: the JSON value, the command table and the client. What the device's
        // server, `blemu ctl`, the live view and the MCP tools share, so none of those needs the others.
        .target(name: "ControlProtocol", dependencies: ["LocalIO"], swiftSettings: strict),
        .target(
            name: "Emulation",
            dependencies: [
                "Peripheral", "GATTModel", "BlueZModel", "GATTProfile", "LocalIO", "ControlProtocol",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .target(
            name: "Lab",
            dependencies: ["LocalIO", .product(name: "Logging", package: "swift-log")],
            // The guest's shell functions, a file of their own for the shell linter, compiled in as bytes
            // (`PackageResources`): no bundle to find at run time, and no Foundation to find it with.
            resources: [.embedInCode("guest-functions.sh")],
            swiftSettings: strict),
        // The central side of bluetoothd's client API, for `blemu probe`: it knows nothing of the peripheral side.
        .target(
            name: "ProbeCentral",
            dependencies: [
                "BlueZAgent", "DBus", "GATTModel", "GATTProfile", "BlueZModel", "LocalIO", "Waiting",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .target(
            name: "PeripheralTesting",
            dependencies: ["Peripheral", "GATTModel", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // A fake bluetoothd on a private dbus-daemon, for bus-level tests of one's own peripheral code (level 5 of
        // docs/architecture.md runs on it). Depends on no test framework.
        .target(
            name: "BlueZTesting",
            dependencies: [
                "DBus", "GATTModel", "BlueZModel", "Waiting", "LocalIO",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // `blemu run`'s work: its options as arguments, the device served until a stop signal, and the hand-over
        // between the two executables. Links neither ArgumentParser nor Foundation, so the process that serves stays
        // small.
        .target(
            name: "Serving",
            dependencies: [
                "GATTModel", "BlueZModel", "GATTProfile", "Emulation", "Peripheral", "BlueZ", "DBus", "LocalIO",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // `blemu ui`: a browser's view of a running device, built on its control socket alone. Never linked by
        // `blemu`, so a device served without a view costs what it did.
        .target(
            name: "LiveView",
            dependencies: [
                "ControlProtocol", "LocalIO", .product(name: "Logging", package: "swift-log"),
            ],
            resources: [
                .embedInCode("Page/index.html"), .embedInCode("Page/app.js"), .embedInCode("Page/plot.js"),
                .embedInCode("Page/style.css"),
            ], swiftSettings: strict),
        // `blemu mcp`: the control protocol as Model Context Protocol tools, so an agent steers a running device as a
        // test does. Speaks MCP's JSON-RPC itself, on the control protocol's JSON value (docs/mcp.md says why).
        .target(
            name: "AgentTools",
            dependencies: ["ControlProtocol", "LocalIO", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // `blemu`: Serving alone. `blemu run FILE --option value...` is served here; anything else goes to blemu-cli.
        .executableTarget(name: "blemu", dependencies: ["Serving"], swiftSettings: strict),
        // `blemu-cli`: every command (ArgumentParser, FoundationEssentials, the lab), installed beside blemu or in
        // ../libexec/blemu; its `run` checks the options and hands them back to blemu.
        .executableTarget(
            name: "BlemuCLI",
            dependencies: [
                "GATTModel", "BlueZModel", "GATTProfile", "Emulation", "Peripheral", "BlueZ", "DBus", "Lab",
                "LocalIO", "ProbeCentral", "Serving", "ControlProtocol", "LiveView", "AgentTools",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),

        // Programs written against the library, as a user would; built with everything else so CI keeps them honest.
        .executableTarget(
            name: "HeartRateMonitor", dependencies: exampleDependencies, path: "examples/HeartRateMonitor",
            swiftSettings: strict),
        .executableTarget(
            name: "Thermostat", dependencies: exampleDependencies, path: "examples/Thermostat", swiftSettings: strict),
        .executableTarget(
            name: "Transfer", dependencies: exampleDependencies, path: "examples/Transfer", swiftSettings: strict),

        .testTarget(name: "GATTModelTests", dependencies: ["GATTModel"], swiftSettings: strict),
        .testTarget(name: "LocalIOTests", dependencies: ["LocalIO"], swiftSettings: strict),
        .testTarget(name: "WaitingTests", dependencies: ["Waiting", "PeripheralTesting"], swiftSettings: strict),
        .testTarget(name: "ControlProtocolTests", dependencies: ["ControlProtocol"], swiftSettings: strict),
        // Reads Sources/ and docs/architecture.md only: the drawing is the import graph.
        .testTarget(name: "ArchitectureTests", swiftSettings: strict),
        .testTarget(name: "BlueZModelTests", dependencies: ["BlueZModel", "GATTModel"], swiftSettings: strict),
        // Serving's `BlueZProfileCheck` adds what bluetoothd makes of a profile, as `blemu validate` reports it.
        .testTarget(
            name: "GATTProfileTests", dependencies: ["GATTProfile", "GATTModel", "Serving"],
            swiftSettings: strict),
        // The ATT request list the fake bluetoothd (level 5) and the lab (level 6) both run.
        .target(name: "ScenarioList", path: "Tests/ScenarioList", swiftSettings: strict),
        .testTarget(
            name: "DBusTests",
            dependencies: ["DBus", "BlueZTesting", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .testTarget(
            name: "PeripheralTests",
            dependencies: [
                "Peripheral", "PeripheralTesting", "GATTModel", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "BlueZTests",
            dependencies: [
                "BlueZ", "BlueZModel", "DBus", "Peripheral", "PeripheralTesting", "GATTModel", "BlueZTesting",
                "Emulation", "GATTProfile", "LocalIO",
                "ScenarioList", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "EmulationTests",
            dependencies: [
                "Emulation", "Peripheral", "PeripheralTesting", "GATTModel", "GATTProfile", "BlueZ", "LocalIO",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "LabTests", dependencies: ["Lab", "ProbeCentral", "GATTModel", "GATTProfile", "ScenarioList"],
            exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(
            name: "ProbeCentralTests",
            dependencies: ["ProbeCentral", "GATTProfile", "GATTModel", "BlueZModel", "DBus", "Emulation"],
            exclude: ["Fixtures"], swiftSettings: strict
        ),
        .testTarget(
            name: "LiveViewTests",
            dependencies: ["LiveView", "LocalIO"],
            swiftSettings: strict),
        .testTarget(
            name: "AgentToolsTests",
            dependencies: [
                "AgentTools", "Emulation", "GATTProfile", "LocalIO", "Peripheral", "PeripheralTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "blemuTests",
            dependencies: [
                "BlemuCLI", "BlueZ", "BlueZModel", "DBus", "Emulation", "GATTModel", "Peripheral", "Serving",
            ],
            swiftSettings: strict),
    ]
)
