// EmulationTests has no tests yet: its module is filled by a later issue. This file only lets SwiftPM see the target.
