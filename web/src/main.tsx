import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BrowserRouter, Navigate, Route, Routes } from "react-router";
import { takeKeyFromFragment } from "./api/client";
import { AuthProvider, useAuth } from "./auth/auth";
import { SignIn } from "./signin/SignIn";
import { Layout } from "./shell/Layout";
import { TracesPage } from "./traces/TracesPage";
import { TraceViewer } from "./viewer/TraceViewer";
import { ReviewPage } from "./review/ReviewPage";
import { ModelsPage } from "./models/ModelsPage";
import { ModelDetail } from "./models/ModelDetail";
import { ComparePage } from "./models/ComparePage";
import { SkillsPage } from "./skills/SkillsPage";
import { GepaRunPage } from "./skills/GepaRunPage";
import { SqlPage } from "./sql/SqlPage";
import { ComparisonsPage } from "./comparisons/ComparisonsPage";
import "./styles.css";

// Before anything renders: a #key=… link signs in and leaves the address bar at once.
takeKeyFromFragment();

const queryClient = new QueryClient({
  defaultOptions: { queries: { retry: (n, e: unknown) => n < 2 && !((e as { status?: number }).status! < 500), refetchOnWindowFocus: false } },
});

function Gate() {
  // The pages render while GET /me is in flight (their data loads in
  // parallel); write controls appear once it says the key may write.
  const { key, error } = useAuth();
  if (!key || error) return <SignIn />;
  return (
    <Routes>
      <Route element={<Layout />}>
        <Route index element={<Navigate to="/traces" replace />} />
        <Route path="traces" element={<TracesPage />} />
        <Route path="traces/:id" element={<TraceViewer />} />
        <Route path="review" element={<ReviewPage />} />
        <Route path="models" element={<ModelsPage />} />
        <Route path="models/compare" element={<ComparePage />} />
        <Route path="models/:id" element={<ModelDetail />} />
        <Route path="skills" element={<SkillsPage />} />
        <Route path="skills/:id" element={<GepaRunPage />} />
        <Route path="sql" element={<SqlPage />} />
        <Route path="comparisons" element={<ComparisonsPage />} />
        <Route path="*" element={<NotFoundPage />} />
      </Route>
    </Routes>
  );
}

function NotFoundPage() {
  return (
    <main className="main">
      <h1>Page not found</h1>
      <p>
        <a href="/traces">Go to Traces</a>
      </p>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <BrowserRouter>
        <AuthProvider>
          <Gate />
        </AuthProvider>
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);
