import ArgumentParser
import Emulation
import Serving

/// `blemu show FILE`: the GATT tree a profile describes.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print the GATT tree of a profile with SIG names and decoded values.",
        discussion: """
            Services, characteristics (properties, permissions, security, the BlueZ flags they map to), \
            descriptors, values decoded by their typed fields, and the behaviour: schedules, write rules and \
            faults in words.

            Example:
              blemu show profiles/heart-rate.yaml
              blemu show --json profiles/heart-rate.yaml | jq '.services[].characteristics[].id'
            """)

    @Argument(help: "A profile file (YAML).")
    var file: String

    @Flag(help: "Print JSON for machines.")
    var json = false

    func run() throws {
        let profile = try ProfileInput.load(file)
        if json {
            print(ProfileJSON.document(profile).prettyText)
        } else {
            print(GATTTreeText(profile: profile).rendered)
        }
    }
}
