import { useAuth } from "../auth/auth";
import { CopyButton, Dialog } from "../shell/Dialog";

/**
 * "Connect an agent": the exact OpenTelemetry exporter settings for this
 * server, and the session-recorder upload path, with copy buttons. The key
 * itself is never printed here (it is in this browser's storage only); the
 * settings name the variable to put it in and say what kind it is.
 */
export function ConnectDialog({ onClose }: { onClose: () => void }) {
  const { me } = useAuth();
  const origin = window.location.origin;
  const otlp = `${origin}/api/v1/rm/otel`;
  const env = `export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${otlp}/v1/traces\nexport OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf\nexport OTEL_EXPORTER_OTLP_TRACES_HEADERS="Authorization=Bearer $CRITIC_API_KEY"\nexport OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=${otlp}/v1/logs\nexport OTEL_EXPORTER_OTLP_LOGS_PROTOCOL=http/protobuf\nexport OTEL_EXPORTER_OTLP_LOGS_HEADERS="Authorization=Bearer $CRITIC_API_KEY"\nexport OTEL_LOGS_EXPORTER=otlp\nexport OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true\nexport OTEL_METRICS_EXPORTER=none`;
  const curl = `curl -X POST ${origin}/api/v1/me/transcripts \\\n  -H "Authorization: Bearer $CRITIC_API_KEY" -H "Content-Type: application/json" \\\n  -d "$(jq -Rs '{format: "claude_code", data: .}' < ~/.claude/projects/<project>/<session>.jsonl)"`;
  const readOnly = me?.read_only;
  return (
    <Dialog title="Connect an agent" onClose={onClose} wide>
      <p>
        Key in use: <strong>{readOnly ? "read-only" : "full access"}</strong>
        {readOnly ? " — it cannot send traces; issue a full-access key (critic users issue-key) for the agent." : "; put an API key in CRITIC_API_KEY on the agent's machine."}
      </p>
      <h3>OpenTelemetry (GenAI spans)</h3>
      <p className="muted">Any OTLP/HTTP exporter works: protobuf or JSON, gzip optional. Spans and GenAI log records of one trace become one conversation (the OpenTelemetry GenAI instrumentations send message content as logs). Langfuse SDK: set LANGFUSE_BASE_URL={origin} and LANGFUSE_SECRET_KEY to the API key.</p>
      <div className="copy-block">
        <pre aria-label="OTLP settings" tabIndex={0}>{env}</pre>
        <CopyButton text={env} label="Copy OTLP settings" />
      </div>
      <dl className="kv">
        <dt>Endpoint</dt>
        <dd>
          <code>{otlp}/v1/traces</code> <CopyButton text={`${otlp}/v1/traces`} label="Copy endpoint" />
        </dd>
        <dt>Header</dt>
        <dd>
          <code>Authorization: Bearer &lt;API key&gt;</code>
        </dd>
      </dl>
      <h3>Session recorders (Claude Code, Codex)</h3>
      <p className="muted">Upload a session transcript; a grown snapshot appends its new steps, an older or equal one changes nothing.</p>
      <div className="copy-block">
        <pre aria-label="Transcript upload" tabIndex={0}>{curl}</pre>
        <CopyButton text={curl} label="Copy transcript upload" />
      </div>
    </Dialog>
  );
}
