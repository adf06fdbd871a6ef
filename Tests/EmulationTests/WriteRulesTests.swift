import GATTModel
import GATTProfile
import Testing

@testable import Emulation

@Suite struct WriteRulesTests {
    let setPointRule = WriteRule(
        characteristicID: "set-point",
        actions: [
            .validate(.range(500...3000), error: .outOfRange), .store,
            .set(characteristicID: "temperature", field: "centidegrees", ratePerSecond: 10),
        ])

    @Test func validateRejectsWithTheChosenErrorAndChangesNothing() throws {
        var engine = try WriteRules(profile: Fixtures.heartRate())
        #expect(engine.write([0x02], to: "heart-rate-control-point", at: .zero) == .reject(ATTError(rawValue: 0x80)))
        #expect(engine.value(of: "heart-rate-control-point") == [])
        #expect(
            engine.write([0x01], to: "heart-rate-control-point", at: .zero)
                == .accept([.update(characteristicID: "heart-rate-control-point", value: [0x01])]))
    }

    @Test func rangeIsReadAsTheFirstTypedFieldAndLengthIsChecked() throws {
        var engine = try WriteRules(
            profile: Fixtures.thermostat(writeRules: [
                setPointRule,
                WriteRule(
                    characteristicID: "mode",
                    actions: [.validate(.length(1...1), error: .invalidAttributeValueLength)]),
            ]))
        // 0xFF38 is -200 as an s16: below the range although it is large read as unsigned.
        #expect(engine.write([0x38, 0xFF], to: "set-point", at: .zero) == .reject(.outOfRange))
        #expect(engine.write([0x10], to: "set-point", at: .zero) == .reject(.outOfRange))
        #expect(engine.write([0x01, 0x02], to: "mode", at: .zero) == .reject(.invalidAttributeValueLength))
    }

    @Test func rangeWithoutALayoutReadsALittleEndianUnsigned() {
        let control = Characteristic(id: "c", uuid: BluetoothUUID(0x1), properties: [.write])
        #expect(WriteCheck.number(in: [0x10, 0x0E], of: control) == 3600)
        #expect(WriteCheck.number(in: [], of: control) == nil)
    }

    @Test func setWithARateRampsTheTemperatureToTheSetPointOverTicks() throws {
        var engine = try WriteRules(profile: Fixtures.thermostat(writeRules: [setPointRule]))
        // 2500 (25.00 °C) from 2150 at 10 centidegrees a second: 35 s.
        let decision = engine.write([0xC4, 0x09], to: "set-point", at: .seconds(100))
        #expect(decision == .accept([.update(characteristicID: "set-point", value: [0xC4, 0x09])]))
        #expect(engine.nextDeadline == .seconds(101))
        // One second at 10 centidegrees a second: 2160.
        #expect(engine.tick(at: .seconds(101)) == [.notify(characteristicID: "temperature", value: [0x70, 0x08])])
        var last: [UInt8] = []
        var now = Duration.seconds(101)
        while let deadline = engine.nextDeadline, deadline < .seconds(1000) {
            now = deadline
            last = engine.tick(at: now).compactMap(\.value).last ?? last
        }
        #expect(last == [0xC4, 0x09])
        #expect(now == .seconds(135))
        #expect(engine.value(of: "temperature") == [0xC4, 0x09])
    }

    @Test func aSetIntoAFieldComposesOnAValueChangedElsewhere() throws {
        var engine = try WriteRules(profile: Fixtures.thermostat(writeRules: [setPointRule]))
        engine.valueChanged("temperature", to: [0xD0, 0x07])  // 2000, from a schedule or a central's write
        _ = engine.write([0xC4, 0x09], to: "set-point", at: .seconds(100))
        // The ramp starts from 2000, not the declared 2150: one second at 10 centidegrees a second is 2010.
        #expect(engine.tick(at: .seconds(101)) == [.notify(characteristicID: "temperature", value: [0xDA, 0x07])])
        // Rules that set no field compose on nothing: they are not told.
        var plain = try WriteRules(
            profile: Fixtures.thermostat(writeRules: [WriteRule(characteristicID: "control", actions: [.store])]))
        plain.valueChanged("mode", to: [3])
        #expect(plain.value(of: "mode") == [1])
    }

    @Test func newSetPointReplacesTheRampFromWhereItHadGot() throws {
        var engine = try WriteRules(profile: Fixtures.thermostat(writeRules: [setPointRule]))
        _ = engine.write([0xC4, 0x09], to: "set-point", at: .zero)  // toward 2500
        _ = engine.write([0x66, 0x08], to: "set-point", at: .seconds(10))  // 2150 + 100 = 2250, now toward 2150
        #expect(engine.tick(at: .seconds(15)).compactMap(\.value) == [[0x98, 0x08]])  // 2250 - 50 = 2200
    }

    @Test func setWithoutARateTakesEffectAtOnce() throws {
        var engine = try WriteRules(
            profile: Fixtures.thermostat(writeRules: [
                WriteRule(
                    characteristicID: "set-point",
                    actions: [.set(characteristicID: "temperature", field: "centidegrees", ratePerSecond: nil)])
            ]))
        #expect(
            engine.write([0xC4, 0x09], to: "set-point", at: .zero)
                == .accept([.notify(characteristicID: "temperature", value: [0xC4, 0x09])]))
        #expect(engine.nextDeadline == nil)
    }

    @Test func echoNotifiesTheWrittenValueBackAndReplyIndicatesAFixedOne() throws {
        var engine = try WriteRules(
            profile: Fixtures.thermostat(writeRules: [
                WriteRule(characteristicID: "set-point", actions: [.echo]),
                WriteRule(
                    characteristicID: "control",
                    actions: [.store, .reply(characteristicID: "control", value: [0x10, 0x01, 0x01])]),
            ]))
        #expect(
            engine.write([0x01, 0x02], to: "set-point", at: .zero)
                == .accept([.notify(characteristicID: "set-point", value: [0x01, 0x02])]))
        #expect(
            engine.write([0x01], to: "control", at: .zero)
                == .accept([
                    .update(characteristicID: "control", value: [0x01]),
                    .indicate(characteristicID: "control", value: [0x10, 0x01, 0x01]),
                ]))
    }

    @Test func writeWithoutARuleIsStored() throws {
        var engine = try WriteRules(profile: Fixtures.thermostat(writeRules: []))
        #expect(
            engine.write([0x02], to: "mode", at: .zero) == .accept([.update(characteristicID: "mode", value: [0x02])]))
    }

    @Test func ruleNamingAnUnknownFieldIsRefused() {
        let rule = WriteRule(
            characteristicID: "set-point",
            actions: [.set(characteristicID: "temperature", field: "kelvin", ratePerSecond: nil)])
        #expect(throws: BehaviourError.unknownField(characteristicID: "temperature", field: "kelvin")) {
            try WriteRules(profile: Fixtures.thermostat(writeRules: [rule]))
        }
    }
}
