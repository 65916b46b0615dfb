//! Generated code passes strict lints in the user's crate.
#![deny(missing_docs, unreachable_pub, unused, rust_2018_idioms, nonstandard_style)]

/// Tools of this crate.
pub mod tools {
    use mirobody_core::{tool, tool_service, ToolContext, ToolEnum, UserInfo};

    /// A period.
    #[derive(ToolEnum, Debug)]
    pub enum Period {
        /// A day.
        Day,
        /// A week.
        Week,
    }

    /// Summarise the caller's period.
    ///
    /// Args:
    ///     period: Which period.
    ///     limit: At most this many.
    #[tool(annotations(read_only))]
    pub async fn summarise(
        user: &UserInfo,
        ctx: &ToolContext<'_>,
        #[arg(default = "Week")] period: Period,
        limit: Option<u32>,
    ) -> Result<String, String> {
        let _ = ctx;
        Ok(format!("{:?} {:?} {:?}", user.user_id(), period, limit))
    }

    /// A service.
    #[derive(Default)]
    pub struct Service;

    #[tool_service(register = false)]
    impl Service {
        /// Say hello.
        pub fn hello(&self) -> String {
            "hello".to_owned()
        }
    }
}

fn main() {
    assert!(tools::summarise_tool().is_auth());
    assert_eq!(tools::Service::tools().len(), 1);
}
