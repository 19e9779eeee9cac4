//! Every integration test in one binary, so the build links once (ripgrep's and nextest's
//! layout): one module per area's test file, their shared helpers in `support`.
//! Run one file's tests with `cargo test --test integration <file>::`.

mod support;

mod amd_rocprofv3;
mod amd_rocprofv3_proptest;
mod batch_container;
mod batch_jobfile;
mod batch_pool;
mod batch_resume;
mod batch_schema;
mod batch_slurm;
mod batch_slurm_docker;
mod container_engine;
mod container_library;
mod demo;
mod foundation_cli;
mod foundation_quote;
mod foundation_selection;
mod intel_ocl_retry;
mod intel_parse_cli;
mod metal_oracle;
mod metal_profile_kernel;
mod metal_static_lane;
mod metal_xctrace;
mod ncu_cli;
mod ncu_details_page;
mod ncu_diagnostics;
mod ncu_fixture_inventory;
mod ncu_plan;
mod ncu_proptest;
mod ncu_raw_page;
mod ncu_session_and_discovery;
mod ncu_static_lane;
mod report_chrome;
mod report_diff;
mod report_exports;
mod report_fixtures;
mod report_hatchet;
mod report_table;
mod runner_concurrency;
mod runner_env;
mod runner_executor;
mod runner_hardening_cli;
mod runner_hardening_io;
mod runner_hardening_tree;
mod runner_markers;
mod runner_output;
mod runner_pytest;
mod runner_timeouts;
mod seam_quote_shell;
mod seam_registry;
mod verdicts_demo;
mod verdicts_parse_run;
mod verdicts_roofline;
mod verdicts_schema;
