package model

// PricesAsOf is the date the built-in prices were read from the
// providers' published pricing (standard tier, short context; batch,
// flex, priority and long-context rates differ). A config's [models."ID"]
// tables override them.
const PricesAsOf = "2026-08-21"

// BuiltinPrices returns a fresh copy of the built-in price table, keyed by
// model alias; dated snapshots find their alias through Prices.Lookup.
// Cache writes are Anthropic's 5-minute rate; OpenAI and Gemini charge
// implicit cache writes as input.
func BuiltinPrices() Prices {
	ps := make(Prices, len(builtinPrices))
	for id, p := range builtinPrices {
		ps[id] = p
	}
	return ps
}

var builtinPrices = map[string]Price{
	// OpenAI, platform.openai.com/docs/pricing.
	"gpt-5.5":      {Input: 5, CacheRead: 0.5, CacheWrite: 5, Output: 30},
	"gpt-5.4":      {Input: 2.5, CacheRead: 0.25, CacheWrite: 2.5, Output: 15},
	"gpt-5.4-mini": {Input: 0.75, CacheRead: 0.075, CacheWrite: 0.75, Output: 4.5},
	"gpt-5.4-nano": {Input: 0.2, CacheRead: 0.02, CacheWrite: 0.2, Output: 1.25},
	"gpt-5.1":      {Input: 1.25, CacheRead: 0.125, CacheWrite: 1.25, Output: 10},
	"gpt-5":        {Input: 1.25, CacheRead: 0.125, CacheWrite: 1.25, Output: 10},
	"gpt-5-mini":   {Input: 0.25, CacheRead: 0.025, CacheWrite: 0.25, Output: 2},
	"gpt-5-nano":   {Input: 0.05, CacheRead: 0.005, CacheWrite: 0.05, Output: 0.4},
	"gpt-4.1":      {Input: 2, CacheRead: 0.5, CacheWrite: 2, Output: 8},
	"gpt-4.1-mini": {Input: 0.4, CacheRead: 0.1, CacheWrite: 0.4, Output: 1.6},
	"gpt-4.1-nano": {Input: 0.1, CacheRead: 0.025, CacheWrite: 0.1, Output: 0.4},
	"gpt-4o":       {Input: 2.5, CacheRead: 1.25, CacheWrite: 2.5, Output: 10},
	"gpt-4o-mini":  {Input: 0.15, CacheRead: 0.075, CacheWrite: 0.15, Output: 0.6},
	"o3":           {Input: 2, CacheRead: 0.5, CacheWrite: 2, Output: 8},
	"o4-mini":      {Input: 1.1, CacheRead: 0.275, CacheWrite: 1.1, Output: 4.4},

	// Anthropic, platform.claude.com/docs/en/about-claude/pricing.
	"claude-opus-5":     {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	"claude-opus-4-8":   {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	"claude-opus-4-7":   {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	"claude-opus-4-6":   {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	"claude-opus-4-5":   {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	"claude-opus-4-1":   {Input: 15, CacheRead: 1.5, CacheWrite: 18.75, Output: 75},
	"claude-opus-4-0":   {Input: 15, CacheRead: 1.5, CacheWrite: 18.75, Output: 75},
	"claude-opus-4":     {Input: 15, CacheRead: 1.5, CacheWrite: 18.75, Output: 75},
	"claude-sonnet-5":   {Input: 2, CacheRead: 0.2, CacheWrite: 2.5, Output: 10},
	"claude-sonnet-4-6": {Input: 3, CacheRead: 0.3, CacheWrite: 3.75, Output: 15},
	"claude-sonnet-4-5": {Input: 3, CacheRead: 0.3, CacheWrite: 3.75, Output: 15},
	"claude-sonnet-4-0": {Input: 3, CacheRead: 0.3, CacheWrite: 3.75, Output: 15},
	"claude-sonnet-4":   {Input: 3, CacheRead: 0.3, CacheWrite: 3.75, Output: 15},
	"claude-haiku-4-5":  {Input: 1, CacheRead: 0.1, CacheWrite: 1.25, Output: 5},
	"claude-3-5-haiku":  {Input: 0.8, CacheRead: 0.08, CacheWrite: 1, Output: 4},
	"claude-fable-5":    {Input: 10, CacheRead: 1, CacheWrite: 12.5, Output: 50},
	"claude-mythos-5":   {Input: 10, CacheRead: 1, CacheWrite: 12.5, Output: 50},

	// Gemini, ai.google.dev/gemini-api/docs/pricing (prompts up to 200k
	// tokens; output includes thinking).
	"gemini-3.1-pro-preview": {Input: 2, CacheRead: 0.2, CacheWrite: 2, Output: 12},
	"gemini-3-pro-preview":   {Input: 2, CacheRead: 0.2, CacheWrite: 2, Output: 12},
	"gemini-2.5-pro":         {Input: 1.25, CacheRead: 0.125, CacheWrite: 1.25, Output: 10},
	"gemini-2.5-flash":       {Input: 0.3, CacheRead: 0.03, CacheWrite: 0.3, Output: 2.5},
	"gemini-2.5-flash-lite":  {Input: 0.1, CacheRead: 0.01, CacheWrite: 0.1, Output: 0.4},
}
