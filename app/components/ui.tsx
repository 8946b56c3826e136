import type { ReactNode } from "react";

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

/** A secret or command shown once, in a box that is easy to select and copy. */
export function SecretBox({ label, value }: { label: string; value: string }) {
  return (
    <div className="flex flex-col gap-1">
      <span className="text-sm font-medium">{label}</span>
      <pre
        tabIndex={0}
        aria-label={label}
        className="overflow-x-auto whitespace-pre-wrap break-all rounded bg-stone-900 p-3 font-mono text-sm text-stone-100"
      >
        {value}
      </pre>
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
