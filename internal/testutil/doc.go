// Package testutil holds the set-up that tests of several packages share:
// free loopback ports, the check that a command refuses bad flags at
// start-up, and stores on temporary files (servers on them are in
// server*.go).
//
// It is for tests only: no program imports it. It imports storage and
// seeds, so their own in-package tests cannot use it (an import cycle);
// their external _test packages can.
package testutil
