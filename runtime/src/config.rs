//! The layer's shape.

use crate::error::{Error, Result};

/// The shape of one MobileBert layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MobileBertConfig {
    /// Tokens in the sequence (rows of every activation).
    pub seq_len: usize,
    /// Width of the layer's input and output (MobileBert's `hidden_size`).
    pub hidden: usize,
    /// Width inside the bottleneck (`intra_bottleneck_size`, also
    /// `true_hidden_size`): attention and the feed-forward networks run here.
    pub bottleneck: usize,
    /// Attention heads.
    pub heads: usize,
    /// Width of one head; `heads * head_dim == bottleneck`.
    pub head_dim: usize,
    /// Stacked feed-forward networks (`num_feedforward_networks`).
    pub ffn_count: usize,
    /// Inner width of each feed-forward network (`intermediate_size`).
    pub intermediate: usize,
}

impl MobileBertConfig {
    /// MobileBert as fine-tuned for SQuAD: sequence length 384, hidden 512,
    /// bottleneck 128, 4 heads of 32, 4 feed-forward networks of width 512.
    pub const SQUAD: MobileBertConfig = MobileBertConfig {
        seq_len: 384,
        hidden: 512,
        bottleneck: 128,
        heads: 4,
        head_dim: 32,
        ffn_count: 4,
        intermediate: 512,
    };

    /// The most feed-forward networks a layer may have (MobileBert's 4).
    pub const MAX_FFN: usize = 4;

    /// Checks that every size is at least 1, `heads * head_dim == bottleneck`,
    /// `ffn_count <= MAX_FFN`, and that the largest buffer (the attention
    /// scores, `heads * seq_len^2`) and every accumulation fit comfortably
    /// (each size at most 2^16).
    pub fn validate(&self) -> Result<()> {
        const OP: &str = "mobilebert layer";
        let sizes = [
            ("seq_len", self.seq_len),
            ("hidden", self.hidden),
            ("bottleneck", self.bottleneck),
            ("heads", self.heads),
            ("head_dim", self.head_dim),
            ("ffn_count", self.ffn_count),
            ("intermediate", self.intermediate),
        ];
        for (what, v) in sizes {
            if v == 0 {
                return Err(Error::Kernel(qneon::Error::ZeroDimension { op: OP, what }));
            }
            if v > 1 << 16 {
                return Err(Error::Kernel(qneon::Error::Unsupported {
                    op: OP,
                    dtype: "int8",
                    reason: "every layer size must be at most 65,536",
                }));
            }
        }
        if self.heads * self.head_dim != self.bottleneck {
            return Err(Error::Kernel(qneon::Error::Length {
                op: OP,
                what: "heads * head_dim (must equal the bottleneck width)",
                expected: self.bottleneck,
                got: self.heads * self.head_dim,
            }));
        }
        if self.ffn_count > Self::MAX_FFN {
            return Err(Error::Kernel(qneon::Error::Unsupported {
                op: OP,
                dtype: "int8",
                reason: "at most 4 feed-forward networks (MobileBert's count)",
            }));
        }
        Ok(())
    }

    /// Multiply-accumulates of one forward pass: the fully connected layers
    /// plus attention's `Q K^T` and `P V`.
    pub fn macs(&self) -> u64 {
        let (l, h, b, f) = (
            self.seq_len as u64,
            self.hidden as u64,
            self.bottleneck as u64,
            self.intermediate as u64,
        );
        let fully_connected =
            l * (3 * h * b + 3 * b * b + self.ffn_count as u64 * 2 * b * f + b * h);
        let attention = 2 * l * l * b;
        fully_connected + attention
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squad_layer_has_about_358_million_macs() {
        // 384 * (3*512*128 + 3*128*128 + 4*2*128*512 + 128*512) + 2*384*384*128
        assert_eq!(MobileBertConfig::SQUAD.macs(), 358_612_992);
        MobileBertConfig::SQUAD.validate().unwrap();
    }

    #[test]
    fn inconsistent_shapes_are_errors() {
        let mut c = MobileBertConfig::SQUAD;
        c.head_dim = 31;
        assert!(matches!(
            c.validate(),
            Err(Error::Kernel(qneon::Error::Length { .. }))
        ));
        let mut c = MobileBertConfig::SQUAD;
        c.seq_len = 0;
        assert!(matches!(
            c.validate(),
            Err(Error::Kernel(qneon::Error::ZeroDimension {
                what: "seq_len",
                ..
            }))
        ));
        let mut c = MobileBertConfig::SQUAD;
        c.ffn_count = 5;
        assert!(matches!(
            c.validate(),
            Err(Error::Kernel(qneon::Error::Unsupported { .. }))
        ));
    }
}
