// Command render prints what kustomize builds from each kustomization
// directory given, as YAML documents: the rendered manifests as input for
// tests outside this module (the root module's IAM test runs the daemons
// with exactly the rendered grants). Relative directories are taken from
// -root (default: the repository root, two levels above the working
// directory deploy/check).
//
//	go run ./cmd/render deploy/k8s/gke-resources deploy/k8s/overlays/gke
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	root := flag.String("root", "../..", "repository root")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: render [-root DIR] KUSTOMIZATION_DIR...")
		os.Exit(2)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, dir := range flag.Args() {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(*root, dir)
		}
		m, err := k.Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kustomize build %s: %v\n", dir, err)
			os.Exit(1)
		}
		y, err := m.AsYaml()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", dir, err)
			os.Exit(1)
		}
		fmt.Printf("---\n%s", y)
	}
}
