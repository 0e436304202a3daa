//go:build race

package respserver

const raceEnabled = true
