package benchmarks

import "testing"

// TestImplementationsAgree makes sure the comparison compares like with
// like: every implementation runs without error on every case, and every
// validator finds the *_valid files valid and the *_invalid files invalid.
func TestImplementationsAgree(t *testing.T) {
	cases, err := LoadCheckCases()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		for _, impl := range CheckImpls {
			t.Run(c.Name+"/"+impl.Name, func(t *testing.T) {
				impl.Within(func() {
					run, err := impl.Prepare(c)
					if err != nil {
						t.Fatalf("prepare: %v", err)
					}
					valid, err := run()
					if err != nil {
						t.Fatalf("run: %v", err)
					}
					if impl.Validates && valid != c.WantValid {
						t.Errorf("valid = %v, want %v", valid, c.WantValid)
					}
				})
			})
		}
	}
	dcases, err := LoadDecideCases()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range dcases {
		for _, impl := range DecideImpls {
			t.Run(c.Name+"/"+impl.Name, func(t *testing.T) {
				run, err := impl.Prepare(c)
				if err != nil {
					t.Fatalf("prepare: %v", err)
				}
				if _, err := run(); err != nil {
					t.Fatalf("run: %v", err)
				}
			})
		}
	}
}
