package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/seed54442f1a/rdmapool/loader/probe"
)

const infoUsage = `usage: rdmapool info [--json] [--require]

Reports the RDMA libraries found (their paths) or why not, the devices,
their ports with state and GIDs, RLIMIT_MEMLOCK, and one line saying
whether RDMA can be used here and, if not, what to do. Exit status: 0 (1
with --require when RDMA cannot be used), 2 bad flags.

flags:
`

// info prints what probe.Run found. It exits 0 whether or not RDMA can be
// used: the report is the result. --require makes "not usable" exit 1.
func info(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	require := fs.Bool("require", false, "exit 1 when RDMA cannot be used")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, infoUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	}
	if err == nil && fs.NArg() > 0 { // flag stops at it: a --require after it would go unseen
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdmapool info: %v (rdmapool info --help for usage)\n", err)
		return 2
	}
	r := probe.Run()
	if *asJSON {
		writeJSON(stdout, r)
	} else {
		writeText(stdout, r)
	}
	if *require && !r.Usable {
		return 1
	}
	return 0
}

func writeText(w io.Writer, r probe.Report) {
	fmt.Fprintln(w, "RDMA libraries:")
	if r.LoadErr != nil {
		fmt.Fprintf(w, "  not loaded: %v\n", r.LoadErr)
	} else {
		fmt.Fprintf(w, "  libibverbs  %s\n", r.Libraries.IBVerbs.Path)
		fmt.Fprintf(w, "  librdmacm   %s\n", r.Libraries.RDMACM.Path)
	}
	fmt.Fprintln(w, "Devices:")
	switch {
	case r.LoadErr != nil: // said above
	case r.ListErr != nil:
		fmt.Fprintf(w, "  not listed: %v\n", r.ListErr)
	case len(r.Devices) == 0:
		fmt.Fprintln(w, "  none")
	}
	for _, d := range r.Devices {
		if d.Err != nil {
			fmt.Fprintf(w, "  %s: %v\n", d.Name, d.Err)
			continue
		}
		fmt.Fprintf(w, "  %s\n", d.Name)
		for _, p := range d.Ports {
			fmt.Fprintf(w, "    port %d: %s, %s, MTU %d\n", p.Num, p.State, p.LinkLayer, p.ActiveMTU)
			for _, g := range p.GIDs {
				fmt.Fprintf(w, "      GID[%d] %s\n", g.Index, g.Addr.Unmap())
			}
		}
	}
	fmt.Fprintf(w, "Locked memory limit (RLIMIT_MEMLOCK): %s (max %s)\n", limit(r.Memlock.Cur), limit(r.Memlock.Max))
	fmt.Fprintln(w, r.Verdict)
}

func limit(v uint64) string {
	if v == probe.Unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(v/1024, 10) + " KiB"
}

func writeJSON(w io.Writer, r probe.Report) {
	type port struct {
		Num       uint8    `json:"num"`
		State     string   `json:"state"`
		LinkLayer string   `json:"link_layer"`
		ActiveMTU int      `json:"active_mtu"`
		GIDs      []string `json:"gids"`
	}
	type device struct {
		Name  string `json:"name"`
		Error string `json:"error,omitempty"`
		Ports []port `json:"ports"`
	}
	out := struct {
		IBVerbs    string   `json:"libibverbs,omitempty"`
		RDMACM     string   `json:"librdmacm,omitempty"`
		LoadError  string   `json:"load_error,omitempty"`
		ListError  string   `json:"list_error,omitempty"`
		Devices    []device `json:"devices"`
		MemlockCur string   `json:"memlock"`
		MemlockMax string   `json:"memlock_max"`
		Usable     bool     `json:"usable"`
		Verdict    string   `json:"verdict"`
	}{MemlockCur: limit(r.Memlock.Cur), MemlockMax: limit(r.Memlock.Max), Usable: r.Usable, Verdict: r.Verdict, Devices: []device{}}
	if r.LoadErr != nil {
		out.LoadError = r.LoadErr.Error()
	} else {
		out.IBVerbs, out.RDMACM = r.Libraries.IBVerbs.Path, r.Libraries.RDMACM.Path
	}
	if r.ListErr != nil {
		out.ListError = r.ListErr.Error()
	}
	for _, d := range r.Devices {
		dd := device{Name: d.Name}
		if d.Err != nil {
			dd.Error = d.Err.Error()
		}
		for _, p := range d.Ports {
			pp := port{Num: p.Num, State: p.State, LinkLayer: p.LinkLayer, ActiveMTU: p.ActiveMTU}
			for _, g := range p.GIDs {
				pp.GIDs = append(pp.GIDs, fmt.Sprintf("%d:%s", g.Index, g.Addr.Unmap()))
			}
			dd.Ports = append(dd.Ports, pp)
		}
		out.Devices = append(out.Devices, dd)
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.Encode(out)
}
