import type { TraceDetail } from "../api/client";

type Tool = { name: string; description: string; parameters: unknown };

// A tool definition as the SDKs record it: {type, name, description,
// parameters} (GenAI, OpenLLMetry), OpenAI's {type: "function", function:
// {...}} or Anthropic's {name, description, input_schema}.
function toolOf(v: unknown): Tool | null {
  if (!v || typeof v !== "object") return null;
  const t = v as Record<string, unknown>;
  const f = t.function && typeof t.function === "object" ? (t.function as Record<string, unknown>) : t;
  const str = (x: unknown) => (typeof x === "string" ? x : "");
  const name = str(f.name) || str(t.name);
  if (!name) return null;
  return { name, description: str(f.description) || str(t.description), parameters: f.parameters ?? t.parameters ?? t.input_schema ?? t.inputSchema };
}

/**
 * The tools the agent was given (the trace's metadata.tools), collapsed to
 * one "Tools (N)" line in the header's meta row so the first step stays
 * near the top; open, each tool's name, description and parameters.
 * onToggle says when it opens or closes: the step list below moves.
 */
export function ToolList({ metadata, onToggle }: { metadata: TraceDetail["metadata"]; onToggle?: (open: boolean) => void }) {
  const raw = (metadata as { tools?: unknown } | null)?.tools;
  const tools = Array.isArray(raw) ? raw.map(toolOf).filter((t): t is Tool => t !== null) : [];
  if (tools.length === 0) return null;
  return (
    <details className="disclosure tool-list" onToggle={(e) => onToggle?.((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Tools ({tools.length})</summary>
      <ul aria-label="Tools the agent was given">
        {tools.map((t, i) => (
          <li key={i}>
            <code className="tool-def-name">{t.name}</code>
            {t.description && <span className="muted"> — {t.description}</span>}
            {t.parameters != null && <pre className="code">{JSON.stringify(t.parameters, null, 2)}</pre>}
          </li>
        ))}
      </ul>
    </details>
  );
}
