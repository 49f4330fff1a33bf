package testpart

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissing runs a test that calls Missing in a child `go test -v`, once
// locally and once under CI=true, and checks the skip with its reason and
// the failure.
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
	const reason = "frobnicator is not on PATH; apt-get install frobnicator"
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(goTool, "test", "-v", "-count=1", "-run", "^TestMissing$", ".")
		cmd.Env = append(os.Environ(), "TESTPART_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		got := string(out)
		if ci == "true" {
			if err == nil || !strings.Contains(got, "--- FAIL: TestMissing") ||
				!strings.Contains(got, "CI=true and a part this test needs is missing: "+reason) {
				t.Errorf("CI=true: err=%v, want a failure naming the part; output:\n%s", err, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("local run failed: %v\n%s", err, got)
		}
		if !strings.Contains(got, "--- SKIP: TestMissing") || !strings.Contains(got, reason+" (under CI=true this fails)") {
			t.Errorf("go test -v output lacks the skip with its reason:\n%s", got)
		}
	}
}
