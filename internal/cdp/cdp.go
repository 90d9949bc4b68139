// Package cdp drives a headless Chromium over the DevTools protocol on a
// pipe (--remote-debugging-pipe: commands on the browser's fd 3, replies
// on its fd 4, each message a JSON object ended by a NUL byte), for tests
// that must click through a page in a real browser. It needs no WebSocket
// library and opens no port.
//
// It is small on purpose: navigate, evaluate JavaScript, take a
// screenshot. Events are read and dropped.
package cdp

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"allot/internal/syncbuf"
)

// Browser is a running Chromium with one page attached.
type Browser struct {
	cmd     *exec.Cmd
	toB     *os.File
	fromB   *os.File
	session string
	stderr  syncbuf.Buffer // exec's goroutine writes it while read may take its text

	mu      sync.Mutex
	nextID  int64
	waiting map[int64]chan reply
	readErr error
	closed  chan struct{}
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Launch starts bin (Debian's chromium) headless with a fresh profile in
// profileDir, width x height, and attaches to a blank page.
func Launch(ctx context.Context, bin, profileDir string, width, height int) (*Browser, error) {
	toBr, toW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromR, fromBw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	b := &Browser{toB: toW, fromB: fromR, waiting: map[int64]chan reply{}, closed: make(chan struct{})}
	b.cmd = exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--user-data-dir="+profileDir, fmt.Sprintf("--window-size=%d,%d", width, height),
		"--remote-debugging-pipe", "about:blank")
	b.cmd.ExtraFiles = []*os.File{toBr, fromBw} // fd 3, fd 4
	b.cmd.Stderr = &b.stderr
	// Chromium forks helpers: one process group, ended as a whole.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cdp: starting %s: %w", bin, err)
	}
	toBr.Close()
	fromBw.Close()
	go b.read()
	target, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		b.Close()
		return nil, err
	}
	var t struct{ TargetID string }
	json.Unmarshal(target, &t)
	att, err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": t.TargetID, "flatten": true})
	if err != nil {
		b.Close()
		return nil, err
	}
	var a struct{ SessionID string }
	json.Unmarshal(att, &a)
	b.session = a.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		if _, err := b.Call(ctx, m, nil); err != nil {
			b.Close()
			return nil, err
		}
	}
	if _, err := b.Call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *Browser) read() {
	r := bufio.NewReader(b.fromB)
	for {
		msg, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = fmt.Errorf("cdp: the browser closed its pipe: %v; stderr: %s", err, tail(b.stderr.String(), 2000))
			for _, ch := range b.waiting {
				close(ch)
			}
			b.waiting = map[int64]chan reply{}
			b.mu.Unlock()
			close(b.closed)
			return
		}
		var m struct {
			ID int64 `json:"id"`
			reply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue // an event
		}
		b.mu.Lock()
		ch := b.waiting[m.ID]
		delete(b.waiting, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.reply
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Call sends a command to the page and returns its result.
func (b *Browser) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return b.call(ctx, b.session, method, params)
}

func (b *Browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return nil, b.readErr
	}
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	if _, err := b.toB.Write(append(data, 0)); err != nil {
		return nil, fmt.Errorf("cdp: %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, b.readErr
		}
		if r.Error != nil {
			return nil, fmt.Errorf("cdp: %s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("cdp: %s: %w", method, ctx.Err())
	}
}

// Navigate opens url in the page.
func (b *Browser) Navigate(ctx context.Context, url string) error {
	res, err := b.Call(ctx, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		return err
	}
	var r struct{ ErrorText string }
	json.Unmarshal(res, &r)
	if r.ErrorText != "" {
		return fmt.Errorf("cdp: navigating to %s: %s", url, r.ErrorText)
	}
	return nil
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value into out (nil to discard it).
func (b *Browser) Eval(ctx context.Context, expr string, out any) error {
	res, err := b.Call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("cdp: evaluate: %w", err)
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("cdp: evaluate %q: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// WaitFor evaluates expr every interval until it is true, or fails when
// ctx ends, naming what it waited for.
func (b *Browser) WaitFor(ctx context.Context, what, expr string) error {
	for {
		var ok bool
		err := b.Eval(ctx, "Boolean("+expr+")", &ok)
		if err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cdp: waiting for %s (%s): %w (last error %v)", what, expr, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Screenshot returns a PNG of the page (the whole page when full).
func (b *Browser) Screenshot(ctx context.Context, full bool) ([]byte, error) {
	res, err := b.Call(ctx, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": full})
	if err != nil {
		return nil, err
	}
	var r struct{ Data string }
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// Close ends the browser and every helper it forked.
func (b *Browser) Close() error {
	if b.cmd.Process == nil {
		return errors.New("cdp: not started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	b.call(ctx, "", "Browser.close", nil)
	cancel()
	select {
	case <-b.closed:
	case <-time.After(2 * time.Second):
	}
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	b.cmd.Wait()
	b.toB.Close()
	b.fromB.Close()
	return nil
}
