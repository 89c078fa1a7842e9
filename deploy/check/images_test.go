package check

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImages inspects the oci-archive of every daemon that make images
// wrote (EVENTRELAY_IMAGES_DIR, set by make images): the entrypoint is the
// daemon, the user is 65532 (non-root, listed in /etc/passwd), the CA
// bundle and the static binary are in the layers, and nothing else is.
func TestImages(t *testing.T) {
	dir := os.Getenv("EVENTRELAY_IMAGES_DIR")
	if dir == "" {
		t.Skip("SKIPPED LOUDLY: EVENTRELAY_IMAGES_DIR unset; make images runs this test on the images it builds")
	}
	for _, d := range []string{"publisher", "projector", "catalog", "relayctl"} {
		t.Run(d, func(t *testing.T) {
			blobs := readTar(t, filepath.Join(dir, d+".tar"))
			var index struct {
				Manifests []struct{ Digest string } `json:"manifests"`
			}
			mustJSON(t, blobs["index.json"], &index)
			if len(index.Manifests) != 1 {
				t.Fatalf("index has %d manifests, want 1", len(index.Manifests))
			}
			var manifest struct {
				Config struct{ Digest string } `json:"config"`
				Layers []struct {
					MediaType string `json:"mediaType"`
					Digest    string `json:"digest"`
				} `json:"layers"`
			}
			mustJSON(t, blob(t, blobs, index.Manifests[0].Digest), &manifest)
			var cfg struct {
				Config struct {
					User       string
					Entrypoint []string
					Env        []string
					Labels     map[string]string
				} `json:"config"`
				Created string `json:"created"`
			}
			mustJSON(t, blob(t, blobs, manifest.Config.Digest), &cfg)
			if cfg.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", cfg.Config.User)
			}
			// Reproducible and traceable: created is the commit's time (not
			// the build's), and the labels name the revision.
			if l := cfg.Config.Labels; l["org.opencontainers.image.revision"] == "" || l["org.opencontainers.image.created"] == "" ||
				!strings.HasPrefix(cfg.Created, strings.TrimSuffix(l["org.opencontainers.image.created"], "Z")) {
				t.Errorf("labels %v, created %q: want the revision and the commit's time", l, cfg.Created)
			}
			if strings.Join(cfg.Config.Entrypoint, " ") != "/"+d {
				t.Errorf("entrypoint %q, want [/%s]", cfg.Config.Entrypoint, d)
			}
			files := map[string][]byte{}
			for _, l := range manifest.Layers {
				r := io.Reader(bytes.NewReader(blob(t, blobs, l.Digest)))
				if strings.HasSuffix(l.MediaType, "+gzip") {
					gz, err := gzip.NewReader(r)
					if err != nil {
						t.Fatal(err)
					}
					r = gz
				}
				for name, b := range tarFiles(t, r) {
					files[strings.TrimPrefix(name, "./")] = b
				}
			}
			bin := files[d]
			if len(bin) < 4 || string(bin[1:4]) != "ELF" {
				t.Errorf("/%s is not an ELF binary in the image", d)
			}
			if bytes.Contains(bin, []byte("/lib64/ld-linux")) {
				t.Errorf("/%s is dynamically linked (needs CGO_ENABLED=0)", d)
			}
			if !bytes.Contains(files["etc/ssl/certs/ca-certificates.crt"], []byte("BEGIN CERTIFICATE")) {
				t.Error("no CA bundle at /etc/ssl/certs/ca-certificates.crt")
			}
			if !strings.Contains(string(files["etc/passwd"]), ":65532:65532:") {
				t.Error("/etc/passwd lacks the 65532 user")
			}
			for name := range files {
				switch name {
				case d, "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group":
				default:
					t.Errorf("unexpected file /%s in the image", name)
				}
			}
		})
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return tarFiles(t, f)
}

// tarFiles returns the regular files of a tar stream by name.
func tarFiles(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, "./")] = b
	}
}

func blob(t *testing.T, blobs map[string][]byte, digest string) []byte {
	t.Helper()
	b, ok := blobs["blobs/"+strings.Replace(digest, ":", "/", 1)]
	if !ok {
		t.Fatalf("blob %s missing from the archive", digest)
	}
	return b
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
