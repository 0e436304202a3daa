package server

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The bit library of valkey's scripts (LuaBitOp 1.0): 32-bit operations on
// Lua numbers, each argument wrapped to a signed 32-bit integer first.

func luaBitLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			r := bitArg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				r = op(r, bitArg(L, i))
			}
			L.Push(lua.LNumber(r))
			return 1
		}
	}
	shift := func(op func(a int32, n uint) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			a, n := bitArg(L, 1), uint(bitArg(L, 2))&31
			L.Push(lua.LNumber(op(a, n)))
			return 1
		}
	}
	for name, fn := range map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { L.Push(lua.LNumber(bitArg(L, 1))); return 1 },
		"bnot":    func(L *lua.LState) int { L.Push(lua.LNumber(^bitArg(L, 1))); return 1 },
		"band":    fold(func(a, b int32) int32 { return a & b }),
		"bor":     fold(func(a, b int32) int32 { return a | b }),
		"bxor":    fold(func(a, b int32) int32 { return a ^ b }),
		"lshift":  shift(func(a int32, n uint) int32 { return int32(uint32(a) << n) }),
		"rshift":  shift(func(a int32, n uint) int32 { return int32(uint32(a) >> n) }),
		"arshift": shift(func(a int32, n uint) int32 { return a >> n }),
		"rol":     shift(func(a int32, n uint) int32 { return int32(uint32(a)<<n | uint32(a)>>((32-n)&31)) }),
		"ror":     shift(func(a int32, n uint) int32 { return int32(uint32(a)>>n | uint32(a)<<((32-n)&31)) }),
		"bswap": func(L *lua.LState) int {
			b := uint32(bitArg(L, 1))
			L.Push(lua.LNumber(int32(b>>24 | b>>8&0xff00 | b<<8&0xff0000 | b<<24)))
			return 1
		},
		"tohex": func(L *lua.LState) int {
			b := uint32(bitArg(L, 1))
			n := int32(8)
			if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
				n = bitArg(L, 2)
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			n = min(n, 8)
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[b&15]
				b >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	} {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// bitArg is LuaBitOp's barg: argument i rounded (to even) and wrapped to
// 32 bits.
func bitArg(L *lua.LState, i int) int32 {
	f := float64(L.CheckNumber(i))
	r := math.RoundToEven(f)
	if math.IsNaN(r) || math.IsInf(r, 0) || math.Abs(r) >= 1<<63 {
		return 0
	}
	return int32(uint32(int64(r)))
}
