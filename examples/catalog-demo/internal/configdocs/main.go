package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: configdocs PATH-OF-configuration.md")
		os.Exit(2)
	}
	path := os.Args[1]
	doc, err := os.ReadFile(path)
	if err == nil {
		doc, err = Render(doc)
	}
	if err == nil {
		err = os.WriteFile(path, doc, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "configdocs:", err)
		os.Exit(1)
	}
}
