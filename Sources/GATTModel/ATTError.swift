/// An Attribute Protocol error code that blemu answers a central with (Core Spec Vol 3, Part F, 3.4.1.1, and
/// Core Specification Supplement Part B, 1.2 for 0xFC-0xFF).
///
/// A struct, not an enum: 0x80-0x9F is an open range of application errors a profile may define.
public struct ATTError: Error, Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The code on the air.
    public let rawValue: UInt8
    /// The error with that code; any byte is a valid code (unknown ones print as "Reserved").
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01: the handle is not valid on this server.
    public static let invalidHandle = ATTError(rawValue: 0x01)
    /// 0x02: the attribute cannot be read.
    public static let readNotPermitted = ATTError(rawValue: 0x02)
    /// 0x03: the attribute cannot be written.
    public static let writeNotPermitted = ATTError(rawValue: 0x03)
    /// 0x04: the PDU was malformed.
    public static let invalidPDU = ATTError(rawValue: 0x04)
    /// 0x05: the link is not authenticated enough.
    public static let insufficientAuthentication = ATTError(rawValue: 0x05)
    /// 0x06: the server does not support the request.
    public static let requestNotSupported = ATTError(rawValue: 0x06)
    /// 0x07: the offset is past the end of the value.
    public static let invalidOffset = ATTError(rawValue: 0x07)
    /// 0x08: the central is not authorized.
    public static let insufficientAuthorization = ATTError(rawValue: 0x08)
    /// 0x09: too many prepared writes are queued.
    public static let prepareQueueFull = ATTError(rawValue: 0x09)
    /// 0x0A: no attribute was found in the handle range.
    public static let attributeNotFound = ATTError(rawValue: 0x0A)
    /// 0x0B: the attribute cannot be read with Read Blob.
    public static let attributeNotLong = ATTError(rawValue: 0x0B)
    /// 0x0C: the encryption key is too short.
    public static let insufficientEncryptionKeySize = ATTError(rawValue: 0x0C)
    /// 0x0D: the value has the wrong length.
    public static let invalidAttributeValueLength = ATTError(rawValue: 0x0D)
    /// 0x0E: the request failed for an unlikely reason.
    public static let unlikelyError = ATTError(rawValue: 0x0E)
    /// 0x0F: the link is not encrypted.
    public static let insufficientEncryption = ATTError(rawValue: 0x0F)
    /// 0x10: the attribute type is not a supported grouping attribute.
    public static let unsupportedGroupType = ATTError(rawValue: 0x10)
    /// 0x11: the server ran out of resources.
    public static let insufficientResources = ATTError(rawValue: 0x11)
    /// 0x12: the central's view of the database is out of date.
    public static let databaseOutOfSync = ATTError(rawValue: 0x12)
    /// 0x13: the value is not allowed.
    public static let valueNotAllowed = ATTError(rawValue: 0x13)
    /// 0xFC: the write request was rejected (Common Profile and Service Error Codes).
    public static let writeRequestRejected = ATTError(rawValue: 0xFC)
    /// 0xFD: the CCCD is improperly configured.
    public static let cccdImproperlyConfigured = ATTError(rawValue: 0xFD)
    /// 0xFE: a procedure is already in progress.
    public static let procedureAlreadyInProgress = ATTError(rawValue: 0xFE)
    /// 0xFF: the value is out of range.
    public static let outOfRange = ATTError(rawValue: 0xFF)

    /// The range of codes an application (a profile) may define.
    public static let applicationRange: ClosedRange<UInt8> = 0x80...0x9F

    /// An application error, 0x80-0x9F; nil outside that range.
    public static func application(_ code: UInt8) -> ATTError? {
        applicationRange.contains(code) ? ATTError(rawValue: code) : nil
    }

    /// Whether the code is in the application range.
    public var isApplicationError: Bool { Self.applicationRange.contains(rawValue) }

    /// Every named error with its kebab-case profile spelling and its name in the specification.
    public static let named: [(error: ATTError, key: String, name: String)] = [
        (.invalidHandle, "invalid-handle", "Invalid Handle"),
        (.readNotPermitted, "read-not-permitted", "Read Not Permitted"),
        (.writeNotPermitted, "write-not-permitted", "Write Not Permitted"),
        (.invalidPDU, "invalid-pdu", "Invalid PDU"),
        (.insufficientAuthentication, "insufficient-authentication", "Insufficient Authentication"),
        (.requestNotSupported, "request-not-supported", "Request Not Supported"),
        (.invalidOffset, "invalid-offset", "Invalid Offset"),
        (.insufficientAuthorization, "insufficient-authorization", "Insufficient Authorization"),
        (.prepareQueueFull, "prepare-queue-full", "Prepare Queue Full"),
        (.attributeNotFound, "attribute-not-found", "Attribute Not Found"),
        (.attributeNotLong, "attribute-not-long", "Attribute Not Long"),
        (.insufficientEncryptionKeySize, "insufficient-encryption-key-size", "Insufficient Encryption Key Size"),
        (.invalidAttributeValueLength, "invalid-attribute-value-length", "Invalid Attribute Value Length"),
        (.unlikelyError, "unlikely-error", "Unlikely Error"),
        (.insufficientEncryption, "insufficient-encryption", "Insufficient Encryption"),
        (.unsupportedGroupType, "unsupported-group-type", "Unsupported Group Type"),
        (.insufficientResources, "insufficient-resources", "Insufficient Resources"),
        (.databaseOutOfSync, "database-out-of-sync", "Database Out Of Sync"),
        (.valueNotAllowed, "value-not-allowed", "Value Not Allowed"),
        (.writeRequestRejected, "write-request-rejected", "Write Request Rejected"),
        (.cccdImproperlyConfigured, "cccd-improperly-configured", "CCCD Improperly Configured"),
        (.procedureAlreadyInProgress, "procedure-already-in-progress", "Procedure Already In Progress"),
        (.outOfRange, "out-of-range", "Out Of Range"),
    ]

    /// The error a profile spelling names: a key such as `value-not-allowed`, or a code such as `0x80`.
    public init?(name: String) {
        if let match = Self.named.first(where: { $0.key == name }) {
            self = match.error
        } else if name.hasPrefix("0x"), let code = UInt8(name.dropFirst(2), radix: 16) {
            self.init(rawValue: code)
        } else {
            return nil
        }
    }

    /// The specification's name, "Application Error" in the application range, else "Reserved".
    public var name: String {
        if let match = Self.named.first(where: { $0.error == self }) { return match.name }
        return isApplicationError ? "Application Error" : "Reserved"
    }

    /// The code and its name, e.g. `0x0E Unlikely Error`.
    public var description: String {
        "0x\(Hex.byte(rawValue)) \(name)"
    }
}
