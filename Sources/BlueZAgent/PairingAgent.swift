import BlueZModel
import DBus
import GATTModel
import Logging

/// The `org.bluez.Agent1` object that answers pairing (5.66:doc/agent-api.txt): a fixed passkey for
/// `RequestPasskey`, yes to confirmations and authorizations, so pairing works unattended as the profile says.
/// Each step is reported (`report`) so the event log and `ctl pairing` show a displayed passkey to type.
package enum PairingAgent {
    /// The interface; calls from anyone but bluetoothd are refused by `owner`.
    package static func interface(
        _ settings: PairingSettings, owner: OwnerCheck, logger: Logger,
        report: @escaping @Sendable (PairingEvent) -> Void = { _ in }
    ) -> Interface {
        func accept(_ name: String, inputs: DBus.Signature = "", method: PairingEvent.Method? = nil) -> Method {
            Method(
                name, inputs: inputs,
                immediate: { call in
                    guard let call = owner.admit(call) else { return }
                    let arguments = call.arguments
                    logger.info("agent: \(name) \(arguments.map(describe).joined(separator: " ")) -> accepted")
                    // DisplayPasskey repeats with each key the central's user types (`entered`): the first says it.
                    let isRepeat = name == "DisplayPasskey" && (arguments.count > 2 && describe(arguments[2]) != "0")
                    if let method, !isRepeat {
                        let central = arguments.first.map(describe) ?? ""
                        let passkey = arguments.count > 1 ? UInt32(describe(arguments[1])) : nil
                        report(PairingEvent(central: central, method: method, passkey: passkey))
                    }
                    call.reply()
                })
        }
        return Interface(
            BlueZName.Interface.agent,
            methods: [
                accept("Release"),
                accept("Cancel", method: .cancelled),
                accept("RequestConfirmation", inputs: "ou", method: .confirmation),
                accept("RequestAuthorization", inputs: "o", method: .authorization),
                accept("AuthorizeService", inputs: "os"),
                accept("DisplayPasskey", inputs: "ouq", method: .displayPasskey),
                accept("DisplayPinCode", inputs: "os"),
                Method(
                    "RequestPasskey", inputs: "o", outputs: "u",
                    immediate: { call in
                        guard let call = owner.admit(call) else { return }
                        let central = call.arguments.first.map(describe) ?? ""
                        guard let passkey = settings.passkey else {
                            logger.warning("agent: RequestPasskey, but the profile has no passkey -> rejected")
                            report(PairingEvent(central: central, method: .requestPasskey, accepted: false))
                            call.fail(BlueZName.Error.rejected, "the profile sets no passkey")
                            return
                        }
                        logger.info("agent: RequestPasskey -> \(passkey)")
                        report(PairingEvent(central: central, method: .requestPasskey, passkey: passkey))
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
