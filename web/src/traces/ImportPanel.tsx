import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, type Format, type ImportResponse } from "../api/client";
import { Dialog } from "../shell/Dialog";

/** The import dialog: a file or pasted text in any supported format, all traces or none; errors name their line and field. */
export function ImportPanel({ onClose }: { onClose: () => void }) {
  const qc = useQueryClient();
  const formats = useQuery({ queryKey: ["formats"], queryFn: () => api<Format[]>("/formats"), staleTime: Infinity });
  const [format, setFormat] = useState("auto");
  const [sourceId, setSourceId] = useState("");
  const [data, setData] = useState("");
  const imp = useMutation({
    mutationFn: () => api<ImportResponse>("/traces/import", { method: "POST", json: { format, data, ...(sourceId.trim() ? { source_id: sourceId.trim() } : {}) } }),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["traces"] }),
  });
  const err = imp.error as ApiError | null;
  return (
    <Dialog title="Import traces" onClose={onClose} wide>
      <div className="row wrap">
        <label className="field">
          <span>Format</span>
          <select aria-label="Format" value={format} onChange={(e) => setFormat(e.target.value)}>
            {(formats.data ?? [{ name: "auto", description: "detect" }]).map((f) => (
              <option key={f.name} value={f.name} title={f.description}>
                {f.name}
              </option>
            ))}
          </select>
        </label>
        <label className="field grow">
          <span>Source id (optional)</span>
          <input value={sourceId} maxLength={200} onChange={(e) => setSourceId(e.target.value)} placeholder="groups runs of one agent" />
        </label>
        <label className="field">
          <span>File</span>
          <input
            type="file"
            accept=".jsonl,.json,.ndjson,.txt"
            onChange={async (e) => {
              const f = e.target.files?.[0];
              if (f) setData(await f.text());
            }}
          />
        </label>
      </div>
      <label className="field">
        <span>Data</span>
        <textarea rows={8} value={data} onChange={(e) => setData(e.target.value)} placeholder="Paste JSONL, or choose a file" spellCheck={false} />
      </label>
      {err && (
        <div role="alert" className="error">
          <p>Import failed: {err.message}</p>
          {(err.line != null || err.field) && (
            <p>
              {err.line != null && <>Line {err.line}</>}
              {err.line != null && err.field && ", "}
              {err.field && (
                <>
                  field <code>{err.field}</code>
                </>
              )}
              . Nothing was imported.
            </p>
          )}
        </div>
      )}
      {imp.isSuccess && (
        <p role="status" className={imp.data.erased.length > 0 ? "warn-text" : "ok"}>
          Imported {imp.data.imported} trace{imp.data.imported === 1 ? "" : "s"} as {imp.data.format}
          {imp.data.unchanged > 0 && <> ({imp.data.unchanged} unchanged)</>}.
          {imp.data.erased.length > 0 && (
            <>
              {" "}
              {imp.data.erased.length} left out: erased before (an erased trace is not stored again; import it under another id).
            </>
          )}
        </p>
      )}
      <div className="row">
        <button type="button" className="primary" disabled={!data || imp.isPending} onClick={() => imp.mutate()}>
          {imp.isPending ? "Importing…" : "Import"}
        </button>
        <button type="button" className="ghost" onClick={onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}
