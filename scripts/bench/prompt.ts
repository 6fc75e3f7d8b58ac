// The benchmarks' chat messages: the one-line greeting, or a conversation of about `bytes` bytes (ASCII, with
// quotes and newlines for JSON to escape), as agents and chat apps send their whole history on every call.
export function benchMessages(bytes: number): { role: string; content: string }[] {
  if (!(bytes > 0)) return [{ role: "user", content: "Say hello to the benchmark." }];
  const messages = [{ role: "system", content: "You are a helpful assistant." }];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const content = `Turn ${i}: ${"lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(4)}"quoted"\nnext line`;
    messages.push({ role: i % 2 === 0 ? "user" : "assistant", content });
    size += content.length + 40;
  }
  messages.push({ role: "user", content: "Say hello to the benchmark." });
  return messages;
}
