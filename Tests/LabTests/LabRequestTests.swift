import Testing

@testable import Lab

/// The lab's switch: `BLEMU_LAB_TESTS=1` on a machine that cannot boot the lab is a failure naming what is missing,
/// not a run whose every lab suite skipped, so a CI job that asked for level 6 cannot pass without it.
@Suite struct LabRequestTests {
    @Test(.enabled(if: LabScenario.isRequested, "runs when BLEMU_LAB_TESTS=1 asks for the lab"))
    func theLabCanBootWhenItIsAskedFor() {
        let prerequisites = LabPrerequisites.check()
        #expect(prerequisites.isComplete, "BLEMU_LAB_TESTS=1, but the lab cannot boot:\n\(prerequisites.report)")
    }
}
