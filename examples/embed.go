// Package examples embeds the bundled example project, so `ductus dev`
// can run it from any folder (it is written out on first use).
package examples

import (
	"embed"
	"io/fs"
)

//go:embed hospital
var files embed.FS

// Hospital returns the example hospital project's files, rooted at the
// project folder.
func Hospital() fs.FS {
	sub, err := fs.Sub(files, "hospital")
	if err != nil {
		panic(err) // the folder is embedded at build time
	}
	return sub
}
