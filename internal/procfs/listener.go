package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ListenerPID returns the pid of the process that holds a listening TCP
// socket on port (IPv4 or IPv6, any local address): for servers that do
// not tell a client their pid (RabbitMQ). It reads /proc/net/tcp{,6} for
// the socket's inode, then every process's fd links for that inode, so it
// sees only processes this user may inspect (root: all).
func (fs FS) ListenerPID(port int) (int, error) {
	inodes := map[string]bool{}
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join(string(fs), "net", name))
		if err != nil {
			continue
		}
		for _, ino := range ListeningInodes(data, port) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("procfs: nothing listens on TCP port %d here", port)
	}
	entries, err := os.ReadDir(string(fs))
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(string(fs), e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("procfs: the socket listening on port %d belongs to no process this user can see", port)
}

// ListeningInodes parses a /proc/net/tcp or tcp6 table and returns the
// inodes of the sockets in LISTEN state (0A) on port.
func ListeningInodes(table []byte, port int) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		p, err := strconv.ParseUint(f[1][i+1:], 16, 16)
		if err != nil || int(p) != port {
			continue
		}
		out = append(out, f[9])
	}
	return out
}
