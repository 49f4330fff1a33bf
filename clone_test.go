package preflight

// The README's test command must pass in a fresh clone with nothing beside
// it: no ../shared, no files that only exist in one developer's working
// copy. TestFreshClone proves it by cloning the committed HEAD into an empty
// temporary directory and running `go test ./...` there.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/internal/testpart"
)

// cloneTestEnv names the variable that turns TestFreshClone on. .ci/run sets
// it for one dedicated step; the nested run gets it set to 0, so it never
// clones again.
const cloneTestEnv = "PREFLIGHT_CLONE_TEST"

func TestFreshClone(t *testing.T) {
	if os.Getenv(cloneTestEnv) != "1" {
		t.Skipf("set %s=1 to clone the repository and run go test ./... in the clone (.ci/run does)", cloneTestEnv)
	}
	if testing.Short() {
		t.Skip("clones the repository and runs its whole test suite")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		testpart.Missing(t, "git is not on PATH; apt-get install git")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testpart.Missing(t, "the go command is not on PATH")
	}
	run := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}

	head := run(".", git, "rev-parse", "HEAD")
	if dirty := run(".", git, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		t.Logf("the working copy has uncommitted changes; the clone tests commit %s without them:\n%s", head, dirty)
	}
	// Nothing beside the clone: its parent is a new empty directory.
	clone := filepath.Join(t.TempDir(), "preflight")
	run(".", git, "clone", "--quiet", "--no-checkout", ".", clone)
	run(clone, git, "checkout", "--quiet", "--detach", head)

	cmd := exec.Command(goTool, "test", "./...")
	cmd.Dir = clone
	// A new user's shell: not CI (so tests whose parts are missing, such as
	// the npm packages a clone lacks, skip, the reason in the -v log) and no second
	// clone.
	cmd.Env = append(withoutEnv(os.Environ(), "CI", cloneTestEnv, "GOFLAGS"), cloneTestEnv+"=0")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("go test ./... in a fresh clone of %s (%s):\n%s", head, time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("go test ./... failed in the fresh clone: %v", err)
	}
	if !strings.Contains(string(out), "ok  \tgithub.com/agentpreflight/preflight\t") {
		t.Fatalf("the nested run did not test the root package")
	}
}

// withoutEnv returns env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var kept []string
next:
	for _, kv := range env {
		for _, name := range names {
			if strings.HasPrefix(kv, name+"=") {
				continue next
			}
		}
		kept = append(kept, kv)
	}
	return kept
}
