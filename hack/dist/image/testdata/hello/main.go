// Command hello is a tiny program the image tests cross-compile for a
// second platform, where compiling the whole of stratus would cost minutes.
package main

import (
	"fmt"
	"runtime"
)

func main() { fmt.Println("hello from", runtime.GOOS+"/"+runtime.GOARCH) }
