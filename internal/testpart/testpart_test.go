package testpart

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissing runs a test that calls Missing in a child `go test`, once
// locally and once under CI=true, and checks the notice, the skip and the
// failure.
func TestMissing(t *testing.T) {
	if os.Getenv("TESTPART_CHILD") == "1" {
		Missing(t, "frobnicator is not on PATH; apt-get install frobnicator")
		t.Fatal("Missing returned")
	}
	if testing.Short() {
		t.Skip("runs go test in a child process")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		Missing(t, "the go command is not on PATH")
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(goTool, "test", "-count=1", "-run", "^TestMissing$", ".")
		cmd.Env = append(os.Environ(), "TESTPART_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		got := string(out)
		if ci == "true" {
			if err == nil || !strings.Contains(got, "CI=true and a part this test needs is missing: frobnicator") {
				t.Errorf("CI=true: err=%v, want a failure naming the part; output:\n%s", err, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("local run failed: %v\n%s", err, got)
		}
		want := "SKIP internal/testpart TestMissing: frobnicator is not on PATH; apt-get install frobnicator (under CI=true this fails)\n"
		if !strings.Contains(got, want) {
			t.Errorf("plain go test output lacks the notice %q:\n%s", want, got)
		}
	}
}
