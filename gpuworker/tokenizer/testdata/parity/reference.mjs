// Reference token ids for gpuworker/tokenizer's parity test, produced by an
// independent implementation: @huggingface/tokenizers (tokenizers.js).
//
// Usage: node reference.mjs TOKENIZER_DIR < corpus.jsonl > ids.jsonl
// Each input line is a JSON string or an object with a "text" field; each
// output line is the JSON array of ids of that text, encoded without adding
// special tokens (special tokens written in the text are still recognised).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node reference.mjs TOKENIZER_DIR < corpus.jsonl");
  process.exit(2);
}
const tokenizerJSON = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
let config = {};
try {
  config = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
} catch (e) {
  if (e.code !== "ENOENT") throw e;
}
const tokenizer = new Tokenizer(tokenizerJSON, config);

const input = readFileSync(0, "utf8");
const out = [];
let lineNo = 0;
for (const line of input.split("\n")) {
  lineNo++;
  if (line.trim() === "") continue;
  let value;
  try {
    value = JSON.parse(line);
  } catch (e) {
    console.error(`line ${lineNo}: ${e.message}`);
    process.exit(1);
  }
  const text = typeof value === "string" ? value : value.text;
  if (typeof text !== "string") {
    console.error(`line ${lineNo}: want a JSON string or {"text": ...}`);
    process.exit(1);
  }
  const ids = text === "" ? [] : tokenizer.encode(text, { add_special_tokens: false }).ids;
  out.push(JSON.stringify(ids));
}
process.stdout.write(out.join("\n") + (out.length ? "\n" : ""));
