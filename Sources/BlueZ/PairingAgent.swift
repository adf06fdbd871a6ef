import DBus
import GATTModel
import Logging

/// The `org.bluez.Agent1` object that answers pairing (5.66:doc/agent-api.txt): a fixed passkey for
/// `RequestPasskey`, yes to confirmations and authorizations, so pairing works unattended as the profile says.
enum PairingAgent {
    /// The interface; calls from anyone but bluetoothd are refused by `owner`.
    static func interface(_ settings: PairingSettings, owner: OwnerCheck, logger: Logger) -> Interface {
        func accept(_ name: String, inputs: DBus.Signature = "") -> Method {
            Method(
                name, inputs: inputs,
                immediate: { call in
                    guard let call = owner.admit(call) else { return }
                    logger.info("agent: \(name) \(call.arguments.map(describe).joined(separator: " ")) -> accepted")
                    call.reply()
                })
        }
        return Interface(
            BlueZName.Interface.agent,
            methods: [
                accept("Release"),
                accept("Cancel"),
                accept("RequestConfirmation", inputs: "ou"),
                accept("RequestAuthorization", inputs: "o"),
                accept("AuthorizeService", inputs: "os"),
                accept("DisplayPasskey", inputs: "ouq"),
                accept("DisplayPinCode", inputs: "os"),
                Method(
                    "RequestPasskey", inputs: "o", outputs: "u",
                    immediate: { call in
                        guard let call = owner.admit(call) else { return }
                        guard let passkey = settings.passkey else {
                            logger.warning("agent: RequestPasskey, but the profile has no passkey -> rejected")
                            call.fail(BlueZName.Error.rejected, "the profile sets no passkey")
                            return
                        }
                        logger.info("agent: RequestPasskey -> \(passkey)")
                        call.reply([.uint32(passkey)])
                    }),
                Method(
                    "RequestPinCode", inputs: "o", outputs: "s",
                    immediate: { call in
                        guard let call = owner.admit(call) else { return }
                        // Legacy (BR/EDR) PIN pairing: the passkey's digits serve, or 0000.
                        let pin = settings.passkey.map { String($0) } ?? "0000"
                        logger.info("agent: RequestPinCode -> \(pin)")
                        call.reply([.string(pin)])
                    }),
            ])
    }

    private static func describe(_ value: DBusValue) -> String {
        switch value {
        case .objectPath(let path): path.rawValue
        case .uint32(let number): String(number)
        case .uint16(let number): String(number)
        case .string(let text): text
        default: "\(value)"
        }
    }
}
