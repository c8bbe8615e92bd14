// Runs before the app: applies the remembered theme so the first paint is
// already in the right colours.
import { applyTheme, storedTheme } from "./theme";
applyTheme(storedTheme());
