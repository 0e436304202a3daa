package mr

// NewPD is newPD, for package mr_test.
var NewPD = newPD
