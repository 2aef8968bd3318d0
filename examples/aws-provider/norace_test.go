//go:build !race

package main

// raceEnabled says this test binary was built with -race.
const raceEnabled = false
