"""Two versions of one tool's definitions (`orders_v1.json`, `orders_v2.json`) for `toolproof diff`: an
enum narrowed, a range widened, an optional field added and a description that gained an instruction.
`toolproof examples DIR` copies them out of the package."""
