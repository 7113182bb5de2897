//! Attribute names of NeMo Lens's semantic conventions (its `nemo.lens.semconv`), so Rust and
//! Python ranks write the same keys. `gen_ai.*` and `k8s.*` follow OpenTelemetry's
//! conventions at [`SEMCONV_VERSION`]; `dl.*`, `rl.*`, `gym.*`, `slurm.*`, `nemo.*` and
//! `wandb.*` are NeMo's own. Checked name by name against the NeMo Lens package
//! (`tests/all/parity`).

/// The OpenTelemetry semantic-conventions version these names follow.
pub const SEMCONV_VERSION: &str = "1.29.0";

/// Defines the constants and the table of all of them (for the parity check).
macro_rules! names {
    ($($(#[$doc:meta])* $name:ident = $value:literal;)*) => {
        $($(#[$doc])* pub const $name: &str = $value;)*
        /// Every constant of this module as `(NeMo Lens's name, value)`.
        pub const ALL: &[(&str, &str)] = &[$((stringify!($name), $value)),*];
    };
}

names! {
    /// Global rank.
    DL_RANK = "dl.rank";
    /// Number of ranks.
    DL_WORLD_SIZE = "dl.world_size";
    /// Rank on this node.
    DL_LOCAL_RANK = "dl.local_rank";
    /// Data-parallel rank.
    DL_DATA_PARALLEL_RANK = "dl.data_parallel.rank";
    /// Data-parallel size.
    DL_DATA_PARALLEL_SIZE = "dl.data_parallel.size";
    /// Tensor-parallel rank.
    DL_TENSOR_PARALLEL_RANK = "dl.tensor_parallel.rank";
    /// Tensor-parallel size.
    DL_TENSOR_PARALLEL_SIZE = "dl.tensor_parallel.size";
    /// Pipeline-parallel rank.
    DL_PIPELINE_PARALLEL_RANK = "dl.pipeline_parallel.rank";
    /// Pipeline-parallel size.
    DL_PIPELINE_PARALLEL_SIZE = "dl.pipeline_parallel.size";
    /// Training iteration.
    DL_ITERATION = "dl.iteration";
    /// Loss.
    DL_LOSS = "dl.loss";
    /// Gradient norm.
    DL_GRAD_NORM = "dl.grad_norm";
    /// Learning rate.
    DL_LEARNING_RATE = "dl.learning_rate";
    /// Throughput in TFLOP/s.
    DL_THROUGHPUT_TFLOPS = "dl.throughput_tflops";
    /// Throughput in tokens per second.
    DL_THROUGHPUT_TOKENS_PER_SEC = "dl.throughput_tokens_per_sec";
    /// Global batch size.
    DL_BATCH_SIZE = "dl.batch_size";
    /// Sequence length.
    DL_SEQUENCE_LENGTH = "dl.sequence_length";
    /// Micro-batch index.
    DL_MICROBATCH_ID = "dl.microbatch_id";
    /// GenAI operation (`text_completion`, …).
    GENAI_OPERATION_NAME = "gen_ai.operation.name";
    /// GenAI provider.
    GENAI_PROVIDER_NAME = "gen_ai.provider.name";
    /// Requested model.
    GENAI_REQUEST_MODEL = "gen_ai.request.model";
    /// Token type (`input`, `output`).
    GENAI_TOKEN_TYPE = "gen_ai.token.type";
    /// RL algorithm.
    RL_ALGORITHM = "rl.algorithm";
    /// Reward.
    RL_REWARD = "rl.reward";
    /// Mean reward.
    RL_REWARD_MEAN = "rl.reward.mean";
    /// KL divergence.
    RL_KL_DIVERGENCE = "rl.kl_divergence";
    /// Policy loss.
    RL_POLICY_LOSS = "rl.policy_loss";
    /// Value loss.
    RL_VALUE_LOSS = "rl.value_loss";
    /// Policy entropy.
    RL_ENTROPY = "rl.entropy";
    /// Generation backend.
    RL_GENERATION_BACKEND = "rl.generation.backend";
    /// Number of rollouts.
    RL_NUM_ROLLOUTS = "rl.num_rollouts";
    /// Mean response length.
    RL_RESPONSE_LENGTH_MEAN = "rl.response_length.mean";
    /// Gym server name.
    GYM_SERVER_NAME = "gym.server.name";
    /// Gym server type.
    GYM_SERVER_TYPE = "gym.server.type";
    /// Number of Gym servers.
    GYM_NUM_SERVERS = "gym.num_servers";
    /// Rollout batch size.
    GYM_ROLLOUT_BATCH_SIZE = "gym.rollout.batch_size";
    /// Verification success rate.
    GYM_VERIFY_SUCCESS_RATE = "gym.verify.success_rate";
    /// SLURM job id.
    SLURM_JOB_ID = "slurm.job.id";
    /// SLURM job name.
    SLURM_JOB_NAME = "slurm.job.name";
    /// SLURM node list.
    SLURM_NODELIST = "slurm.nodelist";
    /// SLURM node count.
    SLURM_NNODES = "slurm.nnodes";
    /// SLURM task count.
    SLURM_NTASKS = "slurm.ntasks";
    /// SLURM partition.
    SLURM_PARTITION = "slurm.partition";
    /// SLURM cluster.
    SLURM_CLUSTER_NAME = "slurm.cluster.name";
    /// Run id shared by the job's ranks.
    NEMO_RUN_ID = "nemo.run.id";
    /// User or team.
    NEMO_USER_ID = "nemo.user.id";
    /// W&B entity.
    WANDB_ENTITY = "wandb.entity";
    /// W&B project.
    WANDB_PROJECT = "wandb.project";
    /// Kubernetes namespace.
    K8S_NAMESPACE_NAME = "k8s.namespace.name";
    /// Kubernetes pod.
    K8S_POD_NAME = "k8s.pod.name";
    /// Kubernetes pod UID.
    K8S_POD_UID = "k8s.pod.uid";
    /// Kubernetes node.
    K8S_NODE_NAME = "k8s.node.name";
    /// Kubernetes container.
    K8S_CONTAINER_NAME = "k8s.container.name";
    /// Kubernetes job.
    K8S_JOB_NAME = "k8s.job.name";
}

/// Names NeMo Lens added after 0.1.0 (its 0.2.0, with `record_rl_metrics`'s gauges), which the
/// differential suite cannot check: only 0.1.0 is on PyPI. Not in [`ALL`], which is 0.1.0's
/// registry name for name.
pub const SINCE_0_2_0: &[(&str, &str)] = &[
    ("RL_GRAD_NORM", RL_GRAD_NORM),
    ("RL_LEARNING_RATE", RL_LEARNING_RATE),
    ("RL_THROUGHPUT_TOKENS_PER_SEC", RL_THROUGHPUT_TOKENS_PER_SEC),
];
/// Gradient norm of the policy update (NeMo Lens 0.2.0).
pub const RL_GRAD_NORM: &str = "rl.grad_norm";
/// The optimizer's current learning rate (NeMo Lens 0.2.0).
pub const RL_LEARNING_RATE: &str = "rl.learning_rate";
/// Training throughput, tokens per second (NeMo Lens 0.2.0; unit `{token}/s`).
pub const RL_THROUGHPUT_TOKENS_PER_SEC: &str = "rl.throughput.tokens_per_sec";
