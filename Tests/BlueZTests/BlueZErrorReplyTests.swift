import BlueZModel
import GATTModel
import Testing

@testable import BlueZ

/// The table of BlueZ 5.66 src/gatt-database.c `dbus_error_to_att_ecode()`, read from the other side.
@Suite struct BlueZErrorReplyTests {
    @Test(arguments: [
        (ATTError.requestNotSupported, "org.bluez.Error.NotSupported"),
        (.insufficientAuthorization, "org.bluez.Error.NotAuthorized"),
        (.invalidAttributeValueLength, "org.bluez.Error.InvalidValueLength"),
        (.invalidOffset, "org.bluez.Error.InvalidOffset"),
        (.procedureAlreadyInProgress, "org.bluez.Error.InProgress"),
    ])
    func namedErrorsTravelUnderTheirBlueZName(error: ATTError, name: String) {
        let reply = BlueZErrorReply(for: error, operation: .write)
        #expect(reply.name == name)
        #expect(reply.deliveredError == error)
    }

    @Test func applicationErrorsTravelAsFailedWithTheCodeAsMessage() {
        let reply = BlueZErrorReply(for: ATTError(rawValue: 0x9F), operation: .read)
        #expect(reply.name == "org.bluez.Error.Failed")
        #expect(reply.message == "0x9f")
        #expect(UInt8(reply.message.dropFirst(2), radix: 16) == 0x9F)
    }

    @Test func notPermittedDependsOnTheOperation() {
        #expect(BlueZErrorReply(for: .readNotPermitted, operation: .read).name == "org.bluez.Error.NotPermitted")
        #expect(BlueZErrorReply(for: .writeNotPermitted, operation: .write).name == "org.bluez.Error.NotPermitted")
        // On a write, NotPermitted would arrive as 0x03, so 0x02 cannot be delivered there.
        #expect(BlueZErrorReply(for: .readNotPermitted, operation: .write).deliveredError == .unlikelyError)
    }

    @Test func errorsWithoutABlueZSpellingArriveAsUnlikelyError() {
        for error in [ATTError.insufficientEncryption, .valueNotAllowed, .cccdImproperlyConfigured, .outOfRange] {
            let reply = BlueZErrorReply(for: error, operation: .write)
            #expect(reply.deliveredError == .unlikelyError)
            #expect(!reply.name.hasPrefix("org.bluez.Error.Failed"))
            #expect(!BlueZErrorReply.canDeliver(error, operation: .write))
        }
    }

    /// A fault asking for 0x0E itself must not be spelled NotPermitted (it reached bleak as 0x02 once).
    @Test func unlikelyErrorAskedForTravelsUnderANameBluetoothdDoesNotKnow() {
        for operation in [AttributeOperation.read, .write] {
            let reply = BlueZErrorReply(for: .unlikelyError, operation: operation)
            #expect(reply.deliveredError == .unlikelyError)
            #expect(!reply.name.hasPrefix("org.bluez.Error."), "\(reply.name)")
        }
    }

    /// The spelling agrees with BlueZModel's rule for every code and operation: what is said to arrive does.
    @Test func everyCodeIsSpelledAsTheRuleSaysItArrives() {
        for code in 0...255 {
            for operation in [AttributeOperation.read, .write] {
                let error = ATTError(rawValue: UInt8(code))
                let reply = BlueZErrorReply(for: error, operation: operation)
                #expect(reply.deliveredError == error.deliveredThroughBlueZ(on: operation))
                let named = reply.name.hasPrefix("org.bluez.Error.")
                #expect(named == (reply.deliveredError == error && error != .unlikelyError), "\(error) \(operation)")
            }
        }
    }

    @Test func objectPathsFollowDeclarationOrder() {
        let paths = ObjectPaths(instance: 2)
        #expect(paths.descriptor(0, characteristic: 1, service: 3) == "/org/blemu/app2/service3/char1/desc0")
        #expect(paths.advertisement == "/org/blemu/app2/advertisement")
    }
}
