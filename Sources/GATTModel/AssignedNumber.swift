/// A SIG-assigned 16-bit UUID with its name, so profiles may say `heart-rate` and `show` prints names.
///
/// A curated subset of the Assigned Numbers document (Bluetooth SIG, "Assigned Numbers", sections 3.4, 3.7, 3.8):
/// the services, characteristics and descriptors that the bundled profiles and common devices use.
public struct AssignedNumber: Hashable, Sendable {
    /// What kind of attribute the number names.
    public enum Kind: String, Sendable {
        case service
        case characteristic
        case descriptor
    }

    /// The 16-bit number.
    public let number: UInt16
    /// The kebab-case key a profile may use instead of the number, e.g. `heart-rate-measurement`.
    public let key: String
    /// The SIG's name, e.g. "Heart Rate Measurement".
    public let name: String
    /// Service, characteristic or descriptor.
    public let kind: Kind

    /// The UUID the number stands for.
    public var uuid: BluetoothUUID { BluetoothUUID(number) }

    /// Looks a key up among one kind, e.g. `heart-rate` among services; nil when the table does not know it.
    ///
    /// Keys are unique per kind only: "Current Time" is both a service and a characteristic.
    public static func named(_ key: String, kind: Kind) -> AssignedNumber? { byKey[KindedKey(kind: kind, key: key)] }

    /// The entry for a UUID, when it is a known SIG number.
    public static func entry(for uuid: BluetoothUUID) -> AssignedNumber? {
        uuid.uint16.flatMap { byNumber[$0] }
    }

    /// Every key the table knows for one kind, for "did you mean" hints.
    public static func keys(of kind: Kind) -> [String] { table.filter { $0.kind == kind }.map(\.key) }

    private struct KindedKey: Hashable {
        let kind: Kind
        let key: String
    }

    private static let byKey = Dictionary(
        uniqueKeysWithValues: table.map { (KindedKey(kind: $0.kind, key: $0.key), $0) })
    private static let byNumber = Dictionary(uniqueKeysWithValues: table.map { ($0.number, $0) })

    static let table: [AssignedNumber] =
        services.map { AssignedNumber(number: $0.0, key: $0.1, name: $0.2, kind: .service) }
        + characteristics.map { AssignedNumber(number: $0.0, key: $0.1, name: $0.2, kind: .characteristic) }
        + descriptors.map { AssignedNumber(number: $0.0, key: $0.1, name: $0.2, kind: .descriptor) }

    private static let services: [(UInt16, String, String)] = [
        (0x1800, "generic-access", "Generic Access"),
        (0x1801, "generic-attribute", "Generic Attribute"),
        (0x1802, "immediate-alert", "Immediate Alert"),
        (0x1803, "link-loss", "Link Loss"),
        (0x1804, "tx-power", "Tx Power"),
        (0x1805, "current-time", "Current Time"),
        (0x1806, "reference-time-update", "Reference Time Update"),
        (0x1808, "glucose", "Glucose"),
        (0x1809, "health-thermometer", "Health Thermometer"),
        (0x180A, "device-information", "Device Information"),
        (0x180D, "heart-rate", "Heart Rate"),
        (0x180F, "battery", "Battery"),
        (0x1810, "blood-pressure", "Blood Pressure"),
        (0x1812, "human-interface-device", "Human Interface Device"),
        (0x1814, "running-speed-and-cadence", "Running Speed and Cadence"),
        (0x1816, "cycling-speed-and-cadence", "Cycling Speed and Cadence"),
        (0x1818, "cycling-power", "Cycling Power"),
        (0x1819, "location-and-navigation", "Location and Navigation"),
        (0x181A, "environmental-sensing", "Environmental Sensing"),
        (0x181C, "user-data", "User Data"),
        (0x181D, "weight-scale", "Weight Scale"),
        (0x181E, "bond-management", "Bond Management"),
        (0x1822, "pulse-oximeter", "Pulse Oximeter"),
        (0x1826, "fitness-machine", "Fitness Machine"),
    ]

    private static let characteristics: [(UInt16, String, String)] = [
        (0x2A00, "device-name", "Device Name"),
        (0x2A01, "appearance", "Appearance"),
        (0x2A05, "service-changed", "Service Changed"),
        (0x2A06, "alert-level", "Alert Level"),
        (0x2A07, "tx-power-level", "Tx Power Level"),
        (0x2A08, "date-time", "Date Time"),
        (0x2A0F, "local-time-information", "Local Time Information"),
        (0x2A14, "reference-time-information", "Reference Time Information"),
        (0x2A18, "glucose-measurement", "Glucose Measurement"),
        (0x2A19, "battery-level", "Battery Level"),
        (0x2A1C, "temperature-measurement", "Temperature Measurement"),
        (0x2A1D, "temperature-type", "Temperature Type"),
        (0x2A1E, "intermediate-temperature", "Intermediate Temperature"),
        (0x2A21, "measurement-interval", "Measurement Interval"),
        (0x2A23, "system-id", "System ID"),
        (0x2A24, "model-number-string", "Model Number String"),
        (0x2A25, "serial-number-string", "Serial Number String"),
        (0x2A26, "firmware-revision-string", "Firmware Revision String"),
        (0x2A27, "hardware-revision-string", "Hardware Revision String"),
        (0x2A28, "software-revision-string", "Software Revision String"),
        (0x2A29, "manufacturer-name-string", "Manufacturer Name String"),
        (0x2A2A, "regulatory-certification-data-list", "IEEE 11073-20601 Regulatory Certification Data List"),
        (0x2A2B, "current-time", "Current Time"),
        (0x2A35, "blood-pressure-measurement", "Blood Pressure Measurement"),
        (0x2A37, "heart-rate-measurement", "Heart Rate Measurement"),
        (0x2A38, "body-sensor-location", "Body Sensor Location"),
        (0x2A39, "heart-rate-control-point", "Heart Rate Control Point"),
        (0x2A49, "blood-pressure-feature", "Blood Pressure Feature"),
        (0x2A4D, "report", "Report"),
        (0x2A50, "pnp-id", "PnP ID"),
        (0x2A51, "glucose-feature", "Glucose Feature"),
        (0x2A52, "record-access-control-point", "Record Access Control Point"),
        (0x2A53, "rsc-measurement", "RSC Measurement"),
        (0x2A54, "rsc-feature", "RSC Feature"),
        (0x2A55, "sc-control-point", "SC Control Point"),
        (0x2A5B, "csc-measurement", "CSC Measurement"),
        (0x2A5C, "csc-feature", "CSC Feature"),
        (0x2A5D, "sensor-location", "Sensor Location"),
        (0x2A63, "cycling-power-measurement", "Cycling Power Measurement"),
        (0x2A65, "cycling-power-feature", "Cycling Power Feature"),
        (0x2A6D, "pressure", "Pressure"),
        (0x2A6E, "temperature", "Temperature"),
        (0x2A6F, "humidity", "Humidity"),
        (0x2A80, "age", "Age"),
        (0x2A87, "email-address", "Email Address"),
        (0x2A8A, "first-name", "First Name"),
        (0x2A8C, "gender", "Gender"),
        (0x2A8E, "height", "Height"),
        (0x2A90, "last-name", "Last Name"),
        (0x2A98, "weight", "Weight"),
        (0x2A99, "database-change-increment", "Database Change Increment"),
        (0x2A9A, "user-index", "User Index"),
        (0x2A9D, "weight-measurement", "Weight Measurement"),
        (0x2A9E, "weight-scale-feature", "Weight Scale Feature"),
        (0x2A9F, "user-control-point", "User Control Point"),
        (0x2AA2, "language", "Language"),
        (0x2ACC, "fitness-machine-feature", "Fitness Machine Feature"),
        (0x2AD2, "indoor-bike-data", "Indoor Bike Data"),
        (0x2AD3, "training-status", "Training Status"),
        (0x2AD4, "supported-speed-range", "Supported Speed Range"),
        (0x2AD5, "supported-inclination-range", "Supported Inclination Range"),
        (0x2AD6, "supported-resistance-level-range", "Supported Resistance Level Range"),
        (0x2AD7, "supported-heart-rate-range", "Supported Heart Rate Range"),
        (0x2AD8, "supported-power-range", "Supported Power Range"),
        (0x2AD9, "fitness-machine-control-point", "Fitness Machine Control Point"),
        (0x2ADA, "fitness-machine-status", "Fitness Machine Status"),
    ]

    private static let descriptors: [(UInt16, String, String)] = [
        (0x2900, "characteristic-extended-properties", "Characteristic Extended Properties"),
        (0x2901, "characteristic-user-description", "Characteristic User Description"),
        (0x2902, "client-characteristic-configuration", "Client Characteristic Configuration"),
        (0x2903, "server-characteristic-configuration", "Server Characteristic Configuration"),
        (0x2904, "characteristic-presentation-format", "Characteristic Presentation Format"),
        (0x2906, "valid-range", "Valid Range"),
        (0x290B, "environmental-sensing-configuration", "Environmental Sensing Configuration"),
        (0x290C, "environmental-sensing-measurement", "Environmental Sensing Measurement"),
        (0x290D, "environmental-sensing-trigger-setting", "Environmental Sensing Trigger Setting"),
    ]
}

extension BluetoothUUID {
    /// The SIG name of the UUID, e.g. "Heart Rate", when the curated table knows it.
    public var assignedName: String? { AssignedNumber.entry(for: self)?.name }
}
