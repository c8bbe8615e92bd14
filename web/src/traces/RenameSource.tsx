import { useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api } from "../api/client";

/** The display name of the selected source, renamed in place (existing and future traces). */
export function RenameSource({ sourceId, name }: { sourceId: string; name: string }) {
  const qc = useQueryClient();
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(name);
  const rename = useMutation({
    mutationFn: () => api("/trace-sources", { method: "PUT", json: { source_id: sourceId, name: value.trim() } }),
    onSuccess: () => {
      setEditing(false);
      return qc.invalidateQueries({ queryKey: ["traces"] });
    },
  });
  if (!editing)
    return (
      <div className="rename">
        <span className="muted">
          Source <code>{sourceId}</code> is shown as <strong>{name}</strong>.
        </span>
        <button
          type="button"
          onClick={() => {
            setValue(name);
            setEditing(true);
          }}
        >
          Rename source
        </button>
      </div>
    );
  return (
    <form
      className="rename"
      onSubmit={(e) => {
        e.preventDefault();
        rename.mutate();
      }}
    >
      <label className="field">
        <span>Source name</span>
        <input value={value} maxLength={120} onChange={(e) => setValue(e.target.value)} autoFocus />
      </label>
      <button type="submit" className="primary" disabled={!value.trim() || rename.isPending}>
        Save name
      </button>
      <button type="button" className="ghost" onClick={() => setEditing(false)}>
        Cancel
      </button>
      {rename.isError && (
        <span role="alert" className="error">
          {(rename.error as Error).message}
        </span>
      )}
    </form>
  );
}
