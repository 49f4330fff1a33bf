package mcpguard

// RaceEnabled is raceEnabled for the external tests (package mcpguard_test).
var RaceEnabled = raceEnabled
