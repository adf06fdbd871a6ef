import Foundation
import Testing

@testable import ControlProtocol

/// blemu's own JSON (the serving binary links no Foundation) checked against Foundation's, which the
/// tests may still use: what one prints the other reads back the same.
@Suite struct JSONValueTests {
    @Test func aRequestParsesWithEveryKindOfValue() throws {
        let value = try JSONValue(
            parsing: #" {"command":"set","fields":{"percent":50,"temp":-21.5e1,"on":true,"names":["a","b"]},"x":null} "#
        )
        #expect(value["command"] == "set")
        #expect(value["fields"]?["percent"] == .integer(50))
        #expect(value["fields"]?["temp"] == .real(-215))
        #expect(value["fields"]?["on"] == .bool(true))
        #expect(value["fields"]?["names"] == ["a", "b"])
        #expect(value["x"] == .null)
    }

    @Test func stringsKeepEveryEscapeAndScalar() throws {
        let text = #""q\" b\\ s\/ \b\f\n\r\t \u00e9 \ud83d\ude00 é 😀""#
        #expect(try JSONValue(parsing: text) == .string("q\" b\\ s/ \u{8}\u{C}\n\r\t é 😀 é 😀"))
        let printed = JSONValue.string("a\"b\\c\n\u{1}é😀").text
        #expect(printed == #""a\"b\\c\n\u0001é😀""#)
        let foundation = try JSONSerialization.jsonObject(with: Data(printed.utf8), options: .fragmentsAllowed)
        #expect(foundation as? String == "a\"b\\c\n\u{1}é😀")
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\"}", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "\"abc",
        "\"\u{1}\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "[1] 2", "{'a':1}", "NaN", "1e999",
        String(repeating: "[", count: 65) + String(repeating: "]", count: 65),
    ])
    func malformedTextIsRefusedWithAnOffset(text: String) {
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: text) }
    }

    @Test func nestingUpToTheLimitParses() throws {
        let deep = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONValue(parsing: deep) }
    }

    @Test func numbersPrintAsFoundationReadsThem() throws {
        let value: JSONValue = [
            "whole": .number(3), "half": .number(21.5), "tiny": .number(0.00001), "big": .integer(Int64.max),
            "negative": -7, "nan": .number(.nan),
        ]
        #expect(
            value.text == #"{"big":9223372036854775807,"half":21.5,"nan":null,"negative":-7,"tiny":1e-05,"whole":3}"#)
        let parsed = try #require(JSONSerialization.jsonObject(with: Data(value.text.utf8)) as? [String: Any])
        #expect((parsed["tiny"] as? Double) == 0.00001)
        #expect((parsed["big"] as? Int64) == Int64.max)
        #expect(try JSONValue(parsing: value.text) == value)
    }

    @Test func prettyTextIsIndentedSortedAndReadsBack() throws {
        let value: JSONValue = ["values": ["b": "01", "a": "ff"], "version": 1, "empty": [:], "list": []]
        #expect(
            value.prettyText == """
                {
                  "empty": {},
                  "list": [],
                  "values": {
                    "a": "ff",
                    "b": "01"
                  },
                  "version": 1
                }
                """)
        #expect(try JSONValue(parsing: value.prettyText) == value)
    }

    @Test func aRepeatedKeyKeepsItsLastValue() throws {
        #expect(try JSONValue(parsing: #"{"a":1,"a":2}"#)["a"] == 2)
    }
}
