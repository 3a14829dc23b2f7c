"""The backward pass through attention: every gradient of ½‖O − T‖², by hand (``gradients``, ``multi_head_gradients``)."""
