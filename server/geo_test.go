package server

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestGeo: GEOADD's scores, GEODIST, GEOHASH, GEOPOS and the searches with
// every option, against valkey-server, byte for byte.
func TestGeo(t *testing.T) {
	for _, proto := range []string{"2", "3"} {
		p := newPair(t, proto)
		p.same("geoadd", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
		p.same("geoadd", "Sicily", "ch", "13.361389", "38.115556", "Palermo", "12.758489", "38.788135", "edge1", "17.241510", "38.788135", "edge2")
		p.same("geoadd", "Sicily", "nx", "ch", "13", "38", "Palermo", "14", "37.1", "new")
		p.same("geoadd", "Sicily", "xx", "ch", "13", "38", "new2", "14", "37.2", "new")
		// Many places, with distinct coordinates, around Europe and the poles.
		rng := rand.New(rand.NewPCG(7, 7))
		for i := range 300 {
			long := strconv.FormatFloat(-10+rng.Float64()*40, 'f', 6, 64)
			lat := strconv.FormatFloat(35+rng.Float64()*25, 'f', 6, 64)
			if i%10 == 0 {
				lat = strconv.FormatFloat(80+rng.Float64()*5, 'f', 6, 64)
			}
			p.same("geoadd", "places", long, lat, "p"+strconv.Itoa(i))
		}
		p.same("zrange", "places", "0", "-1", "withscores")
		p.same("zrange", "Sicily", "0", "-1", "withscores")
		for _, unit := range []string{"m", "km", "KM", "ft", "mi", "bogus"} {
			p.same("geodist", "Sicily", "Palermo", "Catania", unit)
			p.same("geodist", "places", "p1", "p2", unit)
		}
		p.same("geodist", "Sicily", "Palermo", "none")
		p.same("geodist", "none", "a", "b")
		p.same("geodist", "Sicily", "Palermo", "Catania", "km", "x")
		p.same("geohash", "Sicily", "Palermo", "Catania", "none", "edge1")
		p.same("geohash", "none", "a")
		p.same("geopos", "Sicily", "Palermo", "Catania", "none", "edge2")
		p.same("geopos", "places", "p0", "p10", "p299")
		p.same("geopos", "none", "a")
		centres := [][]string{{"fromlonlat", "15", "37"}, {"frommember", "Palermo"}, {"fromlonlat", "0", "0"}}
		shapes := [][]string{{"byradius", "200", "km"}, {"byradius", "100", "mi"}, {"bybox", "400", "400", "km"},
			{"bybox", "300000", "100000", "m"}, {"byradius", "0", "m"}, {"byradius", "1", "ft"}}
		options := [][]string{{}, {"asc"}, {"desc"}, {"withcoord", "withdist", "withhash"}, {"count", "1"},
			{"count", "2", "desc", "withdist"}, {"count", "3", "any"}, {"withdist", "asc", "count", "2", "any"}}
		for _, ctr := range centres {
			for _, sh := range shapes {
				for _, o := range options {
					cmd := append(append(append([]string{"geosearch", "Sicily"}, ctr...), sh...), o...)
					p.same(cmd...)
				}
			}
		}
		for _, ctr := range [][]string{{"fromlonlat", "5", "45"}, {"frommember", "p3"}, {"frommember", "p10"}, {"fromlonlat", "179.9", "84"}} {
			for _, sh := range [][]string{{"byradius", "500", "km"}, {"bybox", "900", "500", "km"}, {"byradius", "3000", "km"}, {"bybox", "100", "3000", "km"}} {
				for _, o := range options {
					if len(o) > 0 && o[0] == "count" && len(o) == 3 && o[2] == "any" {
						continue // which members ANY finds first is up to the boxes, the same; kept
					}
					cmd := append(append(append([]string{"geosearch", "places"}, ctr...), sh...), o...)
					p.same(cmd...)
				}
				cmd := append(append([]string{"geosearchstore", "dst", "places"}, ctr...), sh...)
				p.same(cmd...)
				p.same("zrange", "dst", "0", "-1", "withscores")
				// The distances stored are valkey's to a bit or two (see
				// geo.go): compare the members and the distances as
				// GEODIST prints them.
				p.same(append(cmd, "storedist", "count", "5")...)
				p.same("zrange", "dst", "0", "-1")
				for _, m := range []string{"p3", "p10", "p17", "p80"} {
					if got, want := p.ours.do("zscore", "dst", m), p.theirs.do("zscore", "dst", m); got != want {
						g, w := replyFloat(got), replyFloat(want)
						if !(math.Abs(g-w) <= 1e-9*math.Abs(w)) { // NaN: a reply without a number
							t.Errorf("STOREDIST score of %s: ours %q, valkey-server %q", m, got, want)
						}
					}
				}
			}
		}
		p.same("georadius_ro", "Sicily", "15", "37", "200", "km", "withdist", "withcoord", "asc")
		p.same("georadius_ro", "Sicily", "15", "37", "200", "km", "store", "x")
		p.same("georadiusbymember_ro", "Sicily", "Palermo", "300", "km", "withdist", "desc", "count", "2")
		p.same("georadiusbymember_ro", "Sicily", "none", "300", "km")
		p.same("georadiusbymember_ro", "nokey", "none", "300", "km")
		p.same("georadius_ro", "places", "10", "50", "800", "km", "count", "4")
		p.same("georadius", "places", "10", "50", "800", "km", "count", "4", "desc", "withdist")
		p.same("georadius", "places", "10", "50", "800", "km", "store", "r1")
		p.same("zrange", "r1", "0", "-1", "withscores")
		p.same("georadius", "places", "10", "50", "800", "km", "storedist", "r2", "count", "3")
		p.same("zrange", "r2", "0", "-1")
		p.same("georadius", "places", "10", "50", "800", "km", "store", "r1", "withdist")
		p.same("georadius", "places", "10", "50", "1", "m", "store", "r1")
		p.same("exists", "r1")
		p.same("georadiusbymember", "places", "p3", "500", "km", "store", "r3", "asc", "count", "2")
		p.same("zrange", "r3", "0", "-1", "withscores")
		p.same("georadiusbymember", "places", "p3", "500", "km", "withcoord", "withhash")
		p.same("georadiusbymember", "nokey", "p3", "500", "km", "store", "r3")
		p.same("exists", "r3")
		p.same("georadius", "places", "10", "50", "800", "km", "store")
		p.same("command", "getkeys", "georadius", "places", "10", "50", "800", "km", "store", "r1")
		p.same("command", "getkeys", "georadius", "places", "10", "50", "800", "km", "storedist", "r2", "store", "r1")
		p.same("command", "getkeys", "georadiusbymember", "places", "p1", "800", "km", "storedist", "r2")
		p.same("multi")
		p.same("georadius", "places", "10", "50", "800", "km", "store", "r4")
		p.same("exec")
		p.same("zcard", "r4")
		// Errors.
		for _, bad := range [][]string{
			{"geoadd", "g", "200", "10", "m"}, {"geoadd", "g", "10", "86", "m"}, {"geoadd", "g", "x", "10", "m"},
			{"geoadd", "g", "inf", "10", "m"}, {"geoadd", "g", "nx", "xx", "1", "1", "m"}, {"geoadd", "g", "1", "1", "m", "2"},
			{"geoadd", "g", "gt", "1", "1", "m"}, {"geoadd", "g", "ch", "ch", "ch"}, {"geoadd", "g", "10", "-90", "m"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37"}, {"geosearch", "Sicily", "byradius", "1", "km"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "-1", "km"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "x", "km"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "parsec"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "bybox", "1", "-1", "km"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "bybox", "x", "1", "km"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "bybox", "1", "y", "km"},
			{"geosearch", "Sicily", "frommember", "none", "byradius", "1", "km"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "frommember", "Palermo", "byradius", "1", "km"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "bybox", "1", "1", "km"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "count", "0"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "count", "x"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "any"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "store", "x"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "storedist"},
			{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "bogus"},
			{"GeoSearch", "Sicily", "byradius", "1", "km", "withdist"},
			{"geosearch", "nokey", "frommember", "x", "byradius", "1", "km"},
			{"geosearch", "nokey", "byradius", "1", "km", "asc"},
			{"geosearchstore", "d", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "withdist"},
			{"geosearchstore", "d", "nokey", "fromlonlat", "15", "37", "byradius", "1", "km"},
			{"geosearchstore", "d", "Sicily", "fromlonlat", "0", "0", "byradius", "1", "km"},
			{"georadius_ro", "Sicily", "15", "37", "-1", "km"}, {"georadius_ro", "Sicily", "181", "37", "1", "km"},
			{"georadiusbymember_ro", "Sicily", "Palermo", "x", "km"},
		} {
			p.same(bad...)
		}
		p.same("exists", "d")
		p.same("set", "str", "x")
		p.same("geoadd", "str", "1", "1", "m")
		p.same("geodist", "str", "a", "b")
		p.same("geopos", "str", "a")
		p.same("geohash", "str", "a")
		p.same("geosearch", "str", "fromlonlat", "1", "1", "byradius", "1", "km")
		p.same("geosearchstore", "d", "str", "fromlonlat", "1", "1", "byradius", "1", "km")
		p.same("geosearchstore", "str", "Sicily", "frommember", "Palermo", "byradius", "300", "km")
		p.same("type", "str")
	}
}

// replyFloat reads a bulk or double reply's number.
func replyFloat(r string) float64 {
	r = strings.TrimSuffix(r, "\r\n")
	r = r[strings.LastIndexAny(r, "\n,")+1:]
	f, err := strconv.ParseFloat(r, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}
