import GATTModel

// Typed fields for the SIG characteristics blemu knows the layout of: a clone of a heart-rate monitor
// says `bpm: 72` rather than `06 48`, and its schedules can then name the fields. A layout is used only when the
// value decodes with it and encodes back to the very same bytes; anything else (reserved bits set, a length the
// flags do not explain, a FLOAT that does not spell back exactly) stays hex.

extension ProfileClone {
    /// The SIG layout of `bytes` as characteristic `uuid`, or nil when blemu knows none or the bytes do not fit it.
    /// Field names are those of the bundled profiles.
    static func sigLayout(uuid: UInt16, bytes: [UInt8]) -> ValueLayout? {
        let flags = bytes.first ?? 0
        func bit(_ n: Int) -> Bool { flags & (1 << n) != 0 }
        func flags8(_ names: [String]) -> FieldSpec {
            FieldSpec(
                name: "flags",
                type: .flags(bytes: 1, bits: names.enumerated().map { FlagBit(name: $0.element, bit: $0.offset) }))
        }
        var fields: [FieldSpec]
        switch uuid {
        case 0x2A19:  // Battery Level (BAS 3.1): percent.
            fields = [FieldSpec(name: "percent", type: .unsigned(bytes: 1))]
        case 0x2A21:  // Measurement Interval (HTS 3.4): seconds.
            fields = [FieldSpec(name: "seconds", type: .unsigned(bytes: 2))]
        case 0x2A37:  // Heart Rate Measurement (HRS 3.1.1): flags, bpm (u8 or u16), energy, RR intervals.
            fields = [
                flags8([
                    "value-format-u16", "sensor-contact-detected", "sensor-contact-supported",
                    "energy-expended-present", "rr-interval-present",
                ]),
                FieldSpec(name: "bpm", type: .unsigned(bytes: bit(0) ? 2 : 1)),
            ]
            if bit(3) { fields.append(FieldSpec(name: "energy-expended", type: .unsigned(bytes: 2))) }
            if bit(4) { fields.append(FieldSpec(name: "rr-intervals", type: .bytes)) }
        case 0x2A1C:  // Temperature Measurement (HTS 3.1.1.1): flags, FLOAT, [time stamp], [type].
            guard !bit(1) else { return nil }  // a 7-byte time stamp in the middle: no field type spells it
            fields = [
                flags8(["fahrenheit", "time-stamp-present", "temperature-type-present"]),
                FieldSpec(name: bit(0) ? "fahrenheit" : "celsius", type: .medfloat),
            ]
            if bit(2) { fields.append(FieldSpec(name: "type", type: .unsigned(bytes: 1))) }
        case 0x2A5B:  // CSC Measurement (CSCS 3.1.1): flags, wheel and crank revolution data when present.
            fields = [flags8(["wheel-revolution-data-present", "crank-revolution-data-present"])]
            if bit(0) {
                fields += [
                    FieldSpec(name: "wheel-revolutions", type: .unsigned(bytes: 4)),
                    FieldSpec(name: "last-wheel-event-time", type: .unsigned(bytes: 2)),
                ]
            }
            if bit(1) {
                fields += [
                    FieldSpec(name: "crank-revolutions", type: .unsigned(bytes: 2)),
                    FieldSpec(name: "last-crank-event-time", type: .unsigned(bytes: 2)),
                ]
            }
        case 0x2A6E:  // Temperature (ESS 3.1.2.3): hundredths of a degree Celsius.
            fields = [FieldSpec(name: "celsius-hundredths", type: .signed(bytes: 2))]
        case 0x2A6F:  // Humidity (ESS 3.1.2.4): hundredths of a percent.
            fields = [FieldSpec(name: "percent-hundredths", type: .unsigned(bytes: 2))]
        default:
            return nil
        }
        let layout = ValueLayout(fields)
        guard let values = layout.decode(bytes), (try? layout.encode(values)) == bytes else { return nil }
        return layout
    }

    /// The length of `hex` when its SIG layout has one fixed size: fixed-size fields and no flags (flags make
    /// fields optional, so the size varies); nil otherwise.
    static func fixedLength(uuid: String, hex: String) -> Int? {
        guard let short = BluetoothUUID(uuid)?.uint16, let bytes = Hex.bytes(hex),
            let layout = sigLayout(uuid: short, bytes: bytes),
            layout.fields.allSatisfy({ $0.type.byteCount != nil }),
            !layout.fields.contains(where: { if case .flags = $0.type { true } else { false } })
        else { return nil }
        return bytes.count
    }

    /// The `fields:` block of a characteristic whose value `hex` has a SIG layout, indented for a characteristic;
    /// nil when it has none (the value stays hex).
    static func fieldLines(uuid: String, hex: String) -> [String]? {
        guard let short = BluetoothUUID(uuid)?.uint16, let bytes = Hex.bytes(hex),
            let layout = sigLayout(uuid: short, bytes: bytes), let values = layout.decode(bytes)
        else { return nil }
        var lines = ["        fields:"]
        for (spec, value) in zip(layout.fields, values) {
            let spelled: String
            switch value {
            case .integer(let number): spelled = String(number)
            case .real(let number): spelled = String(number)
            case .boolean(let flag): spelled = String(flag)
            case .flags(let names): spelled = "[\(names.joined(separator: ", "))]"
            case .text(let text): spelled = quoted(text)
            case .bytes(let bytes): spelled = "\"\(bytes.map(Hex.byte).joined())\""
            }
            if case .flags(_, let bits) = spec.type {
                let named = bits.map { "\($0.name): \($0.bit)" }.joined(separator: ", ")
                lines += [
                    "          - name: \(spec.name)", "            type: \(spec.type.name)",
                    "            bits: { \(named) }", "            value: \(spelled)",
                ]
            } else {
                lines.append("          - { name: \(spec.name), type: \(spec.type.name), value: \(spelled) }")
            }
        }
        return lines
    }
}
