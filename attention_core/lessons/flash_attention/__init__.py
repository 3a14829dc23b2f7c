"""The *FlashAttention* page."""
