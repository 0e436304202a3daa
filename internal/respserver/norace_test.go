//go:build !race

package respserver

const raceEnabled = false
