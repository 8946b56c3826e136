import { useEffect, useState, type ReactNode } from "react";
import { Check, Copy } from "lucide-react";

/** Small accessible building blocks shared by the Dash and auth pages. */

/** A form control under its visible label; `id` is the control's. */
function Labeled(props: { id: string; label: string; children: ReactNode }) {
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={props.id} className="text-sm font-medium text-stone-800">
        {props.label}
      </label>
      {props.children}
    </div>
  );
}

export function Field(props: {
  label: string;
  name: string;
  type?: string;
  defaultValue?: string;
  required?: boolean;
  autoComplete?: string;
  placeholder?: string;
  hint?: string;
  pattern?: string;
  minLength?: number;
}) {
  const id = `field-${props.name}`;
  return (
    <Labeled id={id} label={props.label}>
      <input
        id={id}
        name={props.name}
        type={props.type ?? "text"}
        defaultValue={props.defaultValue}
        required={props.required}
        autoComplete={props.autoComplete}
        placeholder={props.placeholder}
        pattern={props.pattern}
        minLength={props.minLength}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
        className="rounded border border-stone-300 bg-white px-3 py-2 text-stone-900 focus:border-stone-600 focus:outline-none focus:ring-2 focus:ring-stone-400"
      />
      {props.hint ? (
        <p id={`${id}-hint`} className="text-xs text-stone-600">
          {props.hint}
        </p>
      ) : null}
    </Labeled>
  );
}

export function Select(props: {
  label: string;
  name: string;
  options: { value: string; label: string }[];
  defaultValue?: string;
}) {
  const id = `field-${props.name}`;
  return (
    <Labeled id={id} label={props.label}>
      <select
        id={id}
        name={props.name}
        defaultValue={props.defaultValue}
        className="rounded border border-stone-300 bg-white px-3 py-2 focus:outline-none focus:ring-2 focus:ring-stone-400"
      >
        {props.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </Labeled>
  );
}

type ButtonProps = {
  children: ReactNode;
  name?: string;
  value?: string;
  tone?: "primary" | "secondary" | "danger";
  type?: "submit" | "button";
  "aria-label"?: string;
};

export function Button({ tone = "primary", type = "submit", children, ...rest }: ButtonProps) {
  const tones = {
    primary: "bg-stone-900 text-white hover:bg-stone-700",
    secondary: "border border-stone-300 bg-white text-stone-900 hover:bg-stone-100",
    danger: "border border-red-300 bg-white text-red-800 hover:bg-red-50",
  };
  return (
    <button
      type={type}
      {...rest}
      className={`rounded px-3 py-2 text-sm font-medium focus:outline-none focus:ring-2 focus:ring-stone-500 focus:ring-offset-1 ${tones[tone]}`}
    >
      {children}
    </button>
  );
}

/** An error from an action, announced to screen readers. */
export function ErrorNote({ error }: { error?: { message: string; hint?: string; code?: string } | null }) {
  if (!error) return null;
  return (
    <div role="alert" className="rounded border border-red-300 bg-red-50 p-3 text-sm text-red-900">
      <p className="font-medium">{error.message}</p>
      {error.hint ? <p className="mt-1">{error.hint}</p> : null}
    </div>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <div role="status" className="rounded border border-emerald-300 bg-emerald-50 p-3 text-sm text-emerald-900">
      {children}
    </div>
  );
}

/**
 * Copies a text to the clipboard and says so. Where the clipboard is refused (an insecure
 * origin, a denied permission), it selects the text instead, so a key press copies it.
 */
export function CopyButton({ value, label, target }: { value: string; label: string; target?: string }) {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(false), 2000);
    return () => clearTimeout(timer);
  }, [copied]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      const box = target ? document.getElementById(target) : null;
      if (box) window.getSelection()?.selectAllChildren(box);
    }
  };
  return (
    <button
      type="button"
      onClick={copy}
      aria-label={copied ? `${label} copied` : `Copy ${label}`}
      className="inline-flex shrink-0 items-center gap-1 rounded border border-line-strong bg-surface px-2 py-1 text-xs font-medium text-ink hover:bg-stone-100 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-focus"
    >
      {copied ? <Check aria-hidden className="size-3.5" /> : <Copy aria-hidden className="size-3.5" />}
      <span aria-live="polite">{copied ? "Copied" : "Copy"}</span>
    </button>
  );
}

/**
 * A secret or command in a box that wraps (never scrolls sideways on a phone), with a copy
 * button. `label` names it for the copy button and screen readers; shown above unless `hideLabel`.
 */
export function SecretBox({ label, value, hideLabel = false }: { label: string; value: string; hideLabel?: boolean }) {
  const id = `box-${label.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return (
    <div className="flex min-w-0 flex-col gap-1">
      <div className={`flex items-center justify-between gap-2 ${hideLabel ? "sr-only" : ""}`}>
        <span className="text-sm font-medium" id={`${id}-label`}>
          {label}
        </span>
      </div>
      <div className="flex min-w-0 items-start gap-2 rounded bg-stone-900 p-3">
        <pre
          id={id}
          aria-labelledby={`${id}-label`}
          className="min-w-0 flex-1 whitespace-pre-wrap break-all font-mono text-sm text-stone-100"
        >
          {value}
        </pre>
        <CopyButton value={value} label={label} target={id} />
      </div>
    </div>
  );
}

/** What a page or list shows when there is nothing yet: what it is for, and the next step. */
export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="rounded-lg border border-dashed border-line-strong bg-surface p-4 text-sm" role="note">
      <p className="font-medium text-ink">{title}</p>
      {children ? <div className="mt-1 text-muted">{children}</div> : null}
    </div>
  );
}

export function Card({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section aria-label={title} className="rounded-lg border border-stone-200 bg-white p-5 shadow-sm">
      <h2 className="mb-4 text-lg font-semibold">{title}</h2>
      {children}
    </section>
  );
}
