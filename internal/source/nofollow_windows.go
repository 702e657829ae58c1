//go:build windows

package source

// oNoFollow: Windows has no O_NOFOLLOW; files are created with O_EXCL inside a directory
// unstick has just created, which nothing else can have planted a link in.
const oNoFollow = 0
