import { useEffect, useRef } from "react";
import { useNavigate } from "react-router";
import { Keyboard } from "lucide-react";

/**
 * The Dash's keys: `/` searches, `j`/`k` move through the rows of a list, `c` creates an
 * issue, `?` lists them. Keys typed into a field, or with a modifier, are left alone.
 * A list's rows opt in with `data-row-link` on their main link; a search field with `data-search`.
 */
export const SHORTCUTS = [
  { keys: "/", does: "search issues (titles and identifiers)" },
  { keys: "j", does: "next row of the list" },
  { keys: "k", does: "previous row of the list" },
  { keys: "Enter", does: "open the row" },
  { keys: "c", does: "create an issue" },
  { keys: "?", does: "show these keys" },
] as const;

const typing = (target: EventTarget | null) =>
  target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));

function moveRow(step: 1 | -1) {
  const rows = [...document.querySelectorAll<HTMLElement>("main [data-row-link]")];
  if (rows.length === 0) return;
  const at = rows.indexOf(document.activeElement as HTMLElement);
  const next = at === -1 ? (step === 1 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + step));
  rows[next]!.focus();
  rows[next]!.scrollIntoView({ block: "nearest" });
}

export function Shortcuts() {
  const navigate = useNavigate();
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.metaKey || event.ctrlKey || event.altKey || typing(event.target)) return;
      if (dialog.current?.open && event.key !== "?") return;
      switch (event.key) {
        case "/": {
          event.preventDefault();
          const search = document.querySelector<HTMLInputElement>("[data-search]");
          if (search) search.focus();
          else navigate("/dash/queue", { state: { focusSearch: true } });
          break;
        }
        case "j":
        case "k":
          moveRow(event.key === "j" ? 1 : -1);
          break;
        case "c":
          navigate("/dash/issues/new");
          break;
        case "?":
          if (dialog.current?.open) dialog.current.close();
          else dialog.current?.showModal();
          break;
      }
    };
    document.addEventListener("keydown", onKey);
    // Says the keys work now (after hydration); the e2e waits on it before pressing any.
    document.documentElement.dataset.shortcuts = "on";
    return () => {
      document.removeEventListener("keydown", onKey);
      delete document.documentElement.dataset.shortcuts;
    };
  }, [navigate]);
  return (
    <>
      <button
        type="button"
        onClick={() => dialog.current?.showModal()}
        aria-label="Keyboard shortcuts"
        title="Keyboard shortcuts (?)"
        className="rounded p-1 text-muted hover:text-ink focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-focus"
      >
        <Keyboard aria-hidden className="size-5" />
      </button>
      <dialog
        ref={dialog}
        aria-labelledby="shortcuts-title"
        className="m-auto w-[min(24rem,calc(100vw-2rem))] rounded-lg border border-line bg-surface p-5 text-ink shadow-xl backdrop:bg-black/40"
      >
        <h2 id="shortcuts-title" className="mb-3 text-lg font-semibold">
          Keyboard shortcuts
        </h2>
        <dl className="grid grid-cols-[4rem_1fr] gap-x-3 gap-y-2 text-sm">
          {SHORTCUTS.map((s) => (
            <div key={s.keys} className="contents">
              <dt>
                <kbd className="rounded border border-line-strong px-1.5 py-0.5 font-mono text-xs">{s.keys}</kbd>
              </dt>
              <dd>{s.does}</dd>
            </div>
          ))}
        </dl>
        <form method="dialog" className="mt-4 text-right">
          <button
            type="submit"
            className="rounded border border-line-strong px-3 py-1.5 text-sm font-medium hover:bg-stone-100 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-focus"
          >
            Close
          </button>
        </form>
      </dialog>
    </>
  );
}
