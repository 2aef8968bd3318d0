// Package images holds the programs of the images a real node of the
// sandbox and the tests runs without a registry: pause (the pod sandbox
// image) and demo (the HTTP server behind the demo Services), and
// cmd/ociimage, which wraps a static binary into an image tarball that
// `ctr images import` loads into a node's containerd.
//
// It is a module of its own so that neither the stratus binary nor the
// test-bed tools module links the image library.
package images
