// Light and dark themes: the system's (prefers-color-scheme) unless the
// user chose one with the toggle, which is remembered in localStorage.
export type Theme = "light" | "dark";
const key = "ductus-theme";

function stored(): Theme | null {
  try {
    const v = localStorage.getItem(key);
    return v === "light" || v === "dark" ? v : null;
  } catch {
    return null;
  }
}

/** The theme in effect now. */
export function currentTheme(): Theme {
  return stored() ?? (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}

/** Sets the document's theme from the stored choice (none: the system's). */
export function applyTheme(): void {
  const t = stored();
  if (t) document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
}

/** Switches to the other theme and remembers the choice. */
export function toggleTheme(): Theme {
  const next: Theme = currentTheme() === "dark" ? "light" : "dark";
  try {
    localStorage.setItem(key, next);
  } catch {
    /* private mode: for this page only */
  }
  document.documentElement.dataset.theme = next;
  return next;
}
